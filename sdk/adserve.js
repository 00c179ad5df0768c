/*
 * adserve.js: the adserve client for web pages (README "Web SDK").
 *
 *   <div id="ad-top"></div>
 *   <script async src="https://ads.example.com/sdk/v0/adserve.js"></script>
 *   <script>window.adserve=window.adserve||{cmd:[]};adserve.cmd.push(function(){
 *     adserve.registerAd({tagid:"…",element:"ad-top",width:300,height:250});});</script>
 *
 * No dependencies and no build step. It never throws into the page: bad
 * input, network errors and error answers are logged ("[adserve] …") and
 * leave the slot empty.
 */
(function (win, doc) {
    'use strict';

    var PROTOCOL = '0.1.0';              // the serving request's "version"
    var VIEW_RATIO = 0.5, VIEW_MS = 1000; // an impression: half the ad in view for 1 s
    var SANDBOX = 'allow-scripts allow-popups allow-popups-to-escape-sandbox';
    // OpenRTB Native 1.2: image types 1 icon, 3 main; data types 1.. in this order
    var IMG = {1: 'icon', 3: 'main'};
    var DATA = ['sponsored', 'desc', 'rating', 'likes', 'downloads', 'price', 'saleprice',
                'phone', 'address', 'desc2', 'displayurl', 'ctatext'];
    var QUARTILES = ['firstQuartile', 'midpoint', 'thirdQuartile'];

    var prev = win.adserve;
    if (prev && prev.loaded) {
        return;                          // the script twice on one page: the first stays
    }

    var script = doc.currentScript;
    var cfg = {
        // the ad server is where this script came from, unless setConfig says
        server: script && script.src ? new URL(script.src, location.href).origin
                                     : location.origin,
        timeout: 5000,
        debug: /[?&]adserve_debug\b/.test(location.search)
    };
    var user = null;
    var slots = [];
    var listeners = Object.create(null);

    function warn(msg, detail) {
        try { console.warn('[adserve] ' + msg, detail === undefined ? '' : detail); } catch (e) { }
    }

    function debug(msg, detail) {
        if (cfg.debug) {
            try { console.log('[adserve] ' + msg, detail === undefined ? '' : detail); } catch (e) { }
        }
    }

    // every public function: a failure is logged, never thrown into the page
    function safe(fn) {
        return function () {
            try {
                return fn.apply(null, arguments);
            } catch (e) {
                warn('unexpected error', e);
            }
        };
    }

    function emit(name, detail) {
        (listeners[name] || []).slice().forEach(function (fn) {
            try { fn(detail); } catch (e) { warn('a listener of "' + name + '" failed', e); }
        });
    }

    function httpUrl(s) {                // an absolute http(s) URL, or null
        var u;
        try { u = new URL(s); } catch (e) { return null; }
        return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
    }

    function size(n) {
        return typeof n === 'number' && n > 0 && n <= 10000 && n === Math.floor(n);
    }

    function escapeHtml(s) {
        return s.replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; });
    }

    function str(x) {
        return typeof x === 'string' ? x : '';
    }

    function template(x) {              // a page's template, or null
        return typeof x === 'function' || typeof x === 'string' ? x : null;
    }

    /* ---- configuration and the user ---------------------------------- */

    function setConfig(o) {
        o = o || {};
        if (o.server !== undefined) {
            var url = httpUrl(o.server);
            if (url) {
                cfg.server = url.replace(/\/+$/, '');
            } else {
                warn('setConfig: server must be an absolute http(s) URL', o.server);
            }
        }
        if (o.timeout !== undefined) {
            if (size(o.timeout) && o.timeout >= 100) {
                cfg.timeout = o.timeout;
            } else {
                warn('setConfig: timeout must be 100 to 10000 ms', o.timeout);
            }
        }
        if (o.debug !== undefined) {
            cfg.debug = !!o.debug;
        }
    }

    // The spec's user record. A field that would not pass the server's checks
    // is dropped with a warning rather than sent: the server ignores it too,
    // but silently.
    function setUser(u) {
        if (u === null || u === undefined) {
            user = null;
            return;
        }
        var out = {};
        if (u.id !== undefined) {
            if (typeof u.id === 'string' && u.id && new Blob([u.id]).size <= 256 &&
                /^(?:[^\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/.test(u.id)) {
                out.id = u.id;
            } else {
                warn('setUser: id must be a string of 1 to 256 bytes; ignored');
            }
        }
        if (u.yob !== undefined) {
            if (Number.isInteger(u.yob) && u.yob >= 1900 && u.yob <= 2100) {
                out.yob = u.yob;
            } else {
                warn('setUser: yob must be a year from 1900 to 2100; ignored', u.yob);
            }
        }
        if (u.gender !== undefined) {
            if (u.gender === 'M' || u.gender === 'F' || u.gender === 'O') {
                out.gender = u.gender;
            } else {
                warn('setUser: gender must be M, F or O; ignored', u.gender);
            }
        }
        user = out;
    }

    /* ---- slots ---------------------------------------------------------- */

    function registerAd(o) {
        o = o || {};
        var el = typeof o.element === 'string' ? doc.getElementById(o.element) : o.element;
        var responsive = o.responsive === undefined ? 'fixed' : o.responsive;
        if (typeof o.tagid !== 'string' || !/^[A-Za-z0-9._~-]{1,128}$/.test(o.tagid)) {
            return warn('registerAd: tagid must be 1 to 128 letters, digits or . _ ~ -', o.tagid);
        }
        if (!el || el.nodeType !== 1 || !el.isConnected) {
            return warn('registerAd: no element "' + o.element + '" on the page');
        }
        // a recommendation widget may leave its size to the page
        var rec = o.recommendation, sized = !rec || o.width !== undefined || o.height !== undefined;
        if (sized && (!size(o.width) || !size(o.height))) {
            return warn('registerAd: width and height must be whole pixels from 1 to 10000');
        }
        if (responsive !== 'fixed' && responsive !== 'resized') {
            return warn('registerAd: responsive must be fixed or resized', responsive);
        }
        var tpl = o.native && template(o.native.template), rt = rec && template(rec.template);
        if (o.native !== undefined && !tpl) {
            return warn('registerAd: native.template must be a function or an HTML string');
        }
        // what a recommendation request says, the item the reader is looking
        // at and the serving context, checked as the server checks them
        if (rec && (rec.item_id !== undefined && !/^[\w.:~-]{1,128}$/.test(str(rec.item_id)) ||
                    rec.context !== undefined &&
                        !(str(rec.context) && new Blob([rec.context]).size <= 64) ||
                    rec.template !== undefined && !rt)) {
            return warn('registerAd: recommendation: item_id must be 1 to 128 letters, digits or ' +
                        '. _ : ~ -, context 1 to 64 bytes, template as native\'s');
        }
        prune();
        for (var i = 0; i < slots.length; i++) {
            if (slots[i].el === el) {
                warn('registerAd: the element already holds an ad; refresh or destroy it');
                return slots[i].handle;
            }
        }
        var s = {
            tagid: o.tagid, el: el, w: o.width, h: o.height, responsive: responsive,
            collapse: !!o.collapse_nobid, gen: 0, style: el.style.cssText, template: tpl,
            ext: rec && {item_id: rec.item_id, context: rec.context}, recTpl: rt
        };
        s.handle = Object.freeze({
            tagid: s.tagid, element: el,
            refresh: safe(function () { if (slots.indexOf(s) >= 0) load(s); }),
            destroy: safe(function () { drop([s]); })
        });
        // the space is kept from the start, so the page does not jump
        el.style.overflow = 'hidden';
        if (!sized) {
            // the page's own CSS sizes the widget
        } else if (responsive === 'fixed') {
            el.style.width = s.w + 'px';
            el.style.height = s.h + 'px';
        } else {
            el.style.aspectRatio = s.w + ' / ' + s.h;
        }
        s.display = el.style.display;
        slots.push(s);
        load(s);
        return s.handle;
    }

    // A single-page app may take an element out of the page without
    // destroying its slot: the slot goes at the next call.
    function prune() {
        drop(slots.filter(function (s) { return !s.el.isConnected; }));
    }

    // slots named by a handle, an element, or an element's id; all without
    function find(target) {
        prune();
        if (target === undefined) {
            return slots.slice();
        }
        return slots.filter(function (s) {
            return s.handle === target || s.el === target || (target && s.el.id === target);
        });
    }

    function refresh(target) {
        var found = find(target);
        if (!found.length) {
            warn('refresh: no such ad', target);
        }
        found.forEach(load);
    }

    function destroy(target) {
        drop(find(target));
    }

    function drop(list) {
        list.forEach(function (s) {
            var i = slots.indexOf(s);
            if (i >= 0) {
                clear(s);
                s.el.style.cssText = s.style;
                slots.splice(i, 1);
            }
        });
    }

    // stops whatever the slot was doing: its request, its ad, its observers
    function clear(s) {
        s.gen++;
        if (s.abort) {
            s.abort.abort();
        }
        if (s.io) {
            s.io.disconnect();
        }
        if (s.ro) {
            s.ro.disconnect();
        }
        clearTimeout(s.viewTimer);
        if (s.video) {
            s.video.pause();
            s.video.removeAttribute('src');
        }
        s.abort = s.io = s.ro = s.viewTimer = s.inView = s.video = null;
        s.el.textContent = '';
        s.el.style.display = s.display;
        if (s.responsive === 'resized' && s.w) {
            s.el.style.aspectRatio = s.w + ' / ' + s.h;
        }
    }

    /* ---- the serving request -------------------------------------------- */

    function load(s) {
        clear(s);
        var gen = s.gen;
        var abort = s.abort = new AbortController();
        var ms = cfg.timeout;
        var timer = setTimeout(function () { abort.abort(); }, ms);
        var body = {version: PROTOCOL, device: {ua: navigator.userAgent}};
        if (user) {
            body.user = user;
        }
        if (s.ext) {
            body.ext = s.ext;           // undefined members are not sent
        }
        // a text/plain body: a "simple" cross-origin request, which costs no
        // CORS preflight (the server does not insist on a Content-Type)
        fetch(cfg.server + '/app/v0/ad/' + encodeURIComponent(s.tagid), {
            method: 'POST', body: JSON.stringify(body), credentials: 'omit',
            cache: 'no-store', signal: abort.signal
        }).then(function (res) {
            if (res.status === 204) {
                return;
            }
            if (res.status !== 200) {
                return res.text().then(function (text) {
                    throw new Error('HTTP ' + res.status + ' ' + text.slice(0, 200).trim());
                });
            }
            return res.json();
        }).then(function (json) {
            clearTimeout(timer);
            if (gen !== s.gen) {
                return;
            }
            s.abort = null;
            try {
                json === undefined ? nobid(s) : render(s, json);
            } catch (e) {
                clear(s);
                fail(s, e);
            }
        }, function (err) {
            clearTimeout(timer);
            if (gen === s.gen) {
                s.abort = null;
                fail(s, abort.signal.aborted ? 'no answer within ' + ms + ' ms' : err);
            }
        });
    }

    function nobid(s) {
        debug('no ad for ' + s.tagid);
        if (s.collapse) {
            s.el.style.display = 'none';
        }
        emit('nobid', {slot: s.handle});
    }

    function fail(s, err) {
        warn('ad ' + s.tagid + ' left empty: ' + (err && err.message || err));
        emit('error', {slot: s.handle, error: String(err && err.message || err)});
    }

    /* ---- rendering ------------------------------------------------------ */

    function render(s, json) {
        var ad = json && json.ad || {};
        if (ad.native) {
            return renderNative(s, ad);
        }
        if (ad.video) {
            return renderVideo(s, ad);
        }
        if (ad.recommendation) {
            return renderRec(s, ad);
        }
        // a passback (nothing filled; another network's tag) is drawn as
        // HTML markup, at the slot's size if the unit has none, and fires
        // no impression of ours: the tag counts its own
        var p = ad.passback;
        var d = p ? {w: p.w || s.w, h: p.h || s.h, adm: p.adm} : ad.display || {};
        var click = !p && httpUrl(ad.click_url);
        var img = d.banner && httpUrl(d.banner.img);
        var media, node;
        if (!size(d.w) || !size(d.h) || (!img && typeof d.adm !== 'string')) {
            return fail(s, 'the answer holds no ad it can show');
        }
        if (s.responsive === 'fixed' && (d.w > s.w || d.h > s.h)) {
            return fail(s, 'a ' + d.w + 'x' + d.h + ' ad does not fit the ' + s.w + 'x' + s.h + ' slot');
        }
        if (img) {
            node = media = doc.createElement('img');
            media.src = img;
            media.alt = 'Advertisement';
            if (click) {
                node = doc.createElement('a');
                node.href = click;
                node.target = '_blank';
                node.rel = 'noopener';
                node.appendChild(media);
            }
        } else {
            // markup runs in an opaque origin: no access to the page, its
            // cookies or storage, and it cannot navigate the page away
            node = media = doc.createElement('iframe');
            media.setAttribute('sandbox', SANDBOX);
            media.setAttribute('scrolling', 'no');
            media.title = 'Advertisement';
            media.srcdoc = frameDoc(d.adm, click);
        }
        var box = shown(s, node, ad, p && 'passback');
        place(s, box, node, media, d.w, d.h);
        p || watch(s, box, [httpUrl(ad.impression_url)]);
    }

    // the ad's node in the slot, in a box of its own; told as a render,
    // or as event
    function shown(s, node, ad, event) {
        var box = doc.createElement('div');
        box.style.cssText = 'position:relative;overflow:hidden;margin:0 auto';
        box.appendChild(node);
        s.el.appendChild(box);
        debug('ad in ' + s.tagid, ad.id);
        emit(event || 'render', {slot: s.handle, ad: ad});
        return box;
    }

    /* ---- native: the publisher's template, filled ------------------------ */

    // What a template names: {{title}}, {{img.icon}}, {{img.main}},
    // {{data.<type>}}, {{click_url}}; a function also gets vasttag.
    function nativeValues(n) {
        var v = {title: '', img: {}, data: {}, click_url: httpUrl(n.link && n.link.url) || '',
                 vasttag: null};
        (Array.isArray(n.assets) ? n.assets : []).forEach(function (a) {
            var img = a && a.img, data = a && a.data;
            if (a && a.title && typeof a.title.text === 'string') {
                v.title = a.title.text;
            } else if (img && IMG[img.type] && httpUrl(img.url)) {
                v.img[IMG[img.type]] = {url: httpUrl(img.url), w: img.w, h: img.h};
            } else if (data && DATA[data.type - 1] && typeof data.value === 'string') {
                v.data[DATA[data.type - 1]] = data.value;
            } else if (a && a.video && typeof a.video.vasttag === 'string') {
                v.vasttag = a.video.vasttag;
            }
        });
        return v;
    }

    // A template's {{name}} or {{name.member}} is v's value. A URL
    // (click_url, image, img.*: checked as http(s) when v was made) goes in
    // escaped; a text as a text node, set after the markup is parsed: no
    // value of the answer is ever parsed as HTML. blank: links open a new tab.
    function fill(tpl, v, blank) {
        var texts = [], holder = doc.createElement('div');
        holder.innerHTML = tpl.replace(/\{\{\s*([\w.]+)\s*\}\}/g, function (m, name) {
            var x = name.split('.').reduce(function (o, k) { return o && o[k]; }, v);
            if (/^(click_url|image|img\.\w+)$/.test(name)) {
                return escapeHtml(str(x) || str(x && x.url));
            }
            texts.push(str(x));
            return '<span data-adserve-text="' + (texts.length - 1) + '"></span>';
        });
        Array.prototype.forEach.call(holder.querySelectorAll('span[data-adserve-text]'),
            function (e) { e.replaceWith(doc.createTextNode(texts[e.dataset.adserveText] || '')); });
        Array.prototype.forEach.call(blank ? holder.querySelectorAll('a[href]') : [], function (a) {
            a.target = '_blank';
            a.rel = 'noopener';
        });
        return holder;
    }

    // A native ad's impression pixels (event 1, method 1: a JavaScript
    // tracker is never run) and its link's click trackers, http(s) alone.
    // An ad from outside demand lands on the bidder's link: our click URL
    // is then the first of its click trackers.
    function nativeTrackers(n) {
        var events = Array.isArray(n.eventtrackers) ? n.eventtrackers : [];
        var clicks = n.link && Array.isArray(n.link.clicktrackers) ? n.link.clicktrackers : [];
        return {
            imp: events.filter(function (e) { return e && e.event === 1 && e.method === 1; })
                .map(function (e) { return httpUrl(e.url); }),
            click: clicks.map(httpUrl)
        };
    }

    function renderNative(s, ad) {
        var n = ad.native, v = nativeValues(n), tr = nativeTrackers(n), node;
        if (!s.template) {
            return fail(s, 'a native ad needs the slot\'s native.template');
        }
        node = typeof s.template === 'function' ? s.template(v) : s.template;
        node = typeof node === 'string' ? fill(node, v, true) : node;
        if (!node || node.nodeType !== 1) {
            return fail(s, 'native.template made no element');
        }
        var box = shown(s, node, ad);
        box.style.width = box.style.height = '100%';
        // a click, or a middle click (a new tab) on one of its links
        function clicked(e) {
            if ((e.type === 'click' || e.button === 1) && e.target.closest
                && e.target.closest('a[href]')) {
                ping(tr.click.filter(Boolean));
            }
        }
        box.addEventListener('click', clicked);
        box.addEventListener('auxclick', clicked);
        watch(s, box, tr.imp);
    }

    /* ---- a recommendation: the items, each through its click URL -------- */

    // The slot's recommendation.template once per item, in the answer's
    // order, or a plain list. The items are the publisher's own pages: their
    // links stay in the tab. The impression is the answer's impression_url,
    // on the viewability rule of ads (the server counts it once per answer,
    // whatever the unit's ad_log_tracking_mode).
    function renderRec(s, ad) {
        var list = doc.createElement('div'), tpl = s.recTpl, items = ad.recommendation.items;
        list.className = 'adserve-items';       // for the page's CSS
        (Array.isArray(items) ? items : []).forEach(function (it) {
            it = it || {};
            var node, v = {id: str(it.id), title: str(it.title), source: str(it.source),
                           image: httpUrl(it.image) || '', click_url: httpUrl(it.click_url)};
            if (v.click_url) {
                node = typeof tpl === 'function' ? tpl(v) : tpl || recItem(v);
                // not an element: appendChild throws, and the slot fails
                node = list.appendChild(typeof node === 'string' ? fill(node, v) : node);
                node.addEventListener('click', function (e) {
                    if (e.target.closest('a')) {
                        emit('recommendation', {slot: s.handle, event: 'click', item: v});
                    }
                });
            }
        });
        if (!list.firstChild) {
            return fail(s, 'no item to show');
        }
        var box = shown(s, list, ad);
        box.style.width = box.style.height = '100%';
        watch(s, box, [httpUrl(ad.impression_url)]);
    }

    // an item without a template: its image and its title, one link
    function recItem(v) {
        var a = doc.createElement('a'), img = doc.createElement('img');
        a.href = v.click_url;
        a.style.cssText = 'display:flex;gap:8px;margin:8px 0';
        if (v.image) {
            img.src = v.image;
            img.alt = '';
            img.style.cssText = 'width:96px;height:64px;object-fit:cover;flex:none';
            a.appendChild(img);
        }
        a.appendChild(doc.createElement('span')).textContent = v.title;
        return a;
    }

    /* ---- video: a plain <video> that reads the VAST ---------------------- */

    function seconds(t) {              // VAST's HH:MM:SS(.mmm), or null
        var m = /^(\d+):(\d\d):(\d\d(?:\.\d+)?)$/.exec(t || '');
        return m ? m[1] * 3600 + m[2] * 60 + +m[3] : null;
    }

    function parseVast(text) {
        var xml = new DOMParser().parseFromString(String(text), 'application/xml');
        var ad = xml.querySelector('InLine'), linear = ad && ad.querySelector('Linear');
        if (!linear || xml.querySelector('parsererror')) {
            return null;
        }
        function all(sel) {
            return Array.prototype.slice.call(ad.querySelectorAll(sel));
        }
        function urls(sel) {        // the raw text: [ERRORCODE] is filled later
            return all(sel).map(function (e) { return e.textContent.trim(); }).filter(httpUrl);
        }
        var x = {impressions: urls('Impression'), errors: urls('Error'), track: {},
                 click: urls('VideoClicks ClickThrough')[0] || null,
                 skip: seconds(linear.getAttribute('skipoffset')),
                 duration: seconds((ad.querySelector('Duration') || {}).textContent),
                 files: all('MediaFile').map(function (e) {
                     return {url: httpUrl(e.textContent.trim()), type: e.getAttribute('type')};
                 })};
        all('Linear TrackingEvents Tracking').forEach(function (e) {
            var name = e.getAttribute('event'), url = e.textContent.trim();
            if (httpUrl(url)) {
                (x.track[name] = x.track[name] || []).push(
                    {url: url, at: seconds(e.getAttribute('offset'))});
            }
        });
        return x;
    }

    function button(label, css) {
        var b = doc.createElement('button');
        b.type = 'button';
        b.textContent = label;
        b.style.cssText = 'position:absolute;z-index:1;border:0;border-radius:4px;padding:6px ' +
            '10px;font:600 13px system-ui,sans-serif;color:#fff;background:rgba(0,0,0,.7);' +
            'cursor:pointer;' + css;
        return b;
    }

    function renderVideo(s, ad) {
        var x = parseVast(ad.video.vast), video = doc.createElement('video');
        if (!x) {
            return fail(s, 'the VAST holds no InLine linear ad');
        }
        var file = x.files.filter(function (f) { return f.url && video.canPlayType(f.type); })[0];
        if (!file) {
            ping(x.errors.map(function (u) { return u.replace('[ERRORCODE]', '403'); }));
            return fail(s, 'no media file this browser can play');
        }
        video.muted = video.playsInline = true;
        video.preload = 'auto';
        video.src = file.url;
        video.setAttribute('aria-label', 'Advertisement');
        s.video = video;
        var box = shown(s, video, ad);
        place(s, box, video, video, ad.video.w, ad.video.h);
        play(s, box, video, x);
    }

    // Fires each tracking event at its moment; plays while half in view.
    function play(s, box, video, x) {
        var gen = s.gen, sent = {}, skip, sound = button('Sound on', 'left:8px;bottom:8px');
        function fire(name, again) {
            if (gen !== s.gen || (sent[name] && !again)) {
                return;
            }
            sent[name] = true;
            ping((x.track[name] || []).map(function (t) { return t.url; }));
            emit('video', {slot: s.handle, event: name});
        }
        video.addEventListener('playing', function () {
            if (!sent.start) {
                ping(x.impressions);
                emit('impression', {slot: s.handle, url: x.impressions[0] || null});
                fire('start');
            }
        });
        video.addEventListener('timeupdate', function () {
            var d = isFinite(video.duration) ? video.duration : x.duration, t = video.currentTime;
            QUARTILES.forEach(function (q, i) { if (d && t >= d * (i + 1) / 4) fire(q); });
            (x.track.progress || []).forEach(function (p) {
                if (!p.sent && p.at !== null && t >= p.at) {
                    p.sent = true;
                    ping([p.url]);
                }
            });
            if (skip && t >= x.skip) {
                skip.hidden = false;
            }
        });
        video.addEventListener('ended', function () {
            QUARTILES.forEach(function (q) { fire(q); });
            fire('complete');
        });
        video.addEventListener('error', function () {
            ping(x.errors.map(function (u) { return u.replace('[ERRORCODE]', '405'); }));
            fail(s, 'the video could not be played');
        });
        video.addEventListener('click', function () {
            if (x.click) {
                win.open(x.click, '_blank', 'noopener');
                video.pause();
                fire('pause', true);
            }
        });
        video.style.cursor = x.click ? 'pointer' : '';
        sound.addEventListener('click', function () {
            video.muted = !video.muted;
            sound.textContent = video.muted ? 'Sound on' : 'Sound off';
            if (video.muted) {
                fire('mute', true);
            }
        });
        box.appendChild(sound);
        if (x.skip !== null) {
            skip = button('Skip ad', 'right:8px;bottom:8px');
            skip.hidden = true;
            skip.addEventListener('click', function () {
                fire('skip');
                clear(s);
            });
            box.appendChild(skip);
        }
        // muted autoplay is allowed; playing only in view is what a viewer sees
        var io = s.io = new IntersectionObserver(function (entries) {
            var e = entries[entries.length - 1];
            if (e.isIntersecting && e.intersectionRatio >= VIEW_RATIO) {
                video.play().catch(function (err) { debug('play() refused', err); });
            } else if (!video.ended) {
                video.pause();
            }
        }, {threshold: [0, VIEW_RATIO]});
        io.observe(box);
    }

    // The click URL goes where the markup asks for it, %%CLICK_URL%%, and
    // links open outside the frame (<base target>).
    function frameDoc(adm, click) {
        var url = escapeHtml(click || '');
        return '<!DOCTYPE html><html><head><meta charset="utf-8"><base target="_blank">' +
            '<style>html,body{margin:0;padding:0;overflow:hidden}</style></head><body>' +
            adm.replace(/%%CLICK_URL%%/g, function () { return url; }) + '</body></html>';
    }

    // fixed: the ad at its own size, in the slot's registered box. resized:
    // the slot takes its container's width, its height follows the ad's
    // aspect ratio, and the ad is scaled to fill it.
    function place(s, box, node, media, w, h) {
        var st = media.style;
        node.style.display = st.display = 'block';
        st.border = '0';
        if (s.responsive === 'fixed') {
            box.style.width = w + 'px';
            box.style.height = h + 'px';
            media.width = w;
            media.height = h;
            return;
        }
        s.el.style.aspectRatio = w + ' / ' + h;
        box.style.width = box.style.height = node.style.width = node.style.height = '100%';
        if (media === node && media.tagName === 'IFRAME') {
            // markup is laid out at its own size and scaled, as an image is
            st.width = w + 'px';
            st.height = h + 'px';
            st.transformOrigin = '0 0';
            var scale = function () {
                st.transform = 'scale(' + (box.clientWidth / w || 1) + ')';
            };
            scale();
            if (typeof ResizeObserver === 'function') {
                s.ro = new ResizeObserver(scale);
                s.ro.observe(box);
            }
        } else {
            st.width = st.height = '100%';
        }
    }

    /* ---- the impression: half of the ad in view for one second ---------- */

    // tracking URLs: no cookies, no answer read, sent even as the page goes
    function ping(urls) {
        urls.forEach(function (u) {
            fetch(u, {mode: 'no-cors', credentials: 'omit', keepalive: true, cache: 'no-store'})
                .catch(function (e) { warn('a tracking request failed', e); });
        });
    }

    // urls: the impression's pixels, ours first (those that are not http(s)
    // URLs left out)
    function watch(s, box, urls) {
        var gen = s.gen, fired = false;
        urls = urls.filter(Boolean);
        s.fire = function () {
            if (fired || gen !== s.gen) {
                return;
            }
            fired = true;
            if (s.io) {
                s.io.disconnect();
                s.io = null;
            }
            ping(urls);
            emit('impression', {slot: s.handle, url: urls[0] || null});
        };
        if (typeof IntersectionObserver !== 'function') {
            return s.fire();             // no way to tell: counted as shown
        }
        s.io = new IntersectionObserver(function (entries) {
            var e = entries[entries.length - 1];
            s.inView = e.isIntersecting && e.intersectionRatio >= VIEW_RATIO;
            arm(s);
        }, {threshold: [0, VIEW_RATIO]});
        s.io.observe(box);
    }

    // the second starts while the ad is half in view on a visible page, and
    // starts over whenever either stops being true
    function arm(s) {
        var seen = s.io && s.inView && doc.visibilityState === 'visible';
        if (seen && !s.viewTimer) {
            s.viewTimer = setTimeout(s.fire, VIEW_MS);
        } else if (!seen && s.viewTimer) {
            clearTimeout(s.viewTimer);
            s.viewTimer = null;
        }
    }

    doc.addEventListener('visibilitychange', function () { slots.forEach(arm); });

    /* ---- the public object ---------------------------------------------- */

    function run(fn) {
        if (typeof fn !== 'function') {
            return warn('cmd.push takes functions', fn);
        }
        try { fn(); } catch (e) { warn('a queued command failed', e); }
    }

    var api = {
        loaded: true,
        version: PROTOCOL,
        cmd: {
            push: function () {
                Array.prototype.forEach.call(arguments, run);
                return arguments.length;
            }
        },
        setConfig: safe(setConfig),
        setUser: safe(setUser),
        registerAd: safe(registerAd),
        refresh: safe(refresh),
        destroy: safe(destroy),
        on: safe(function (name, fn) {
            if (typeof fn === 'function') {
                (listeners[name] = listeners[name] || []).push(fn);
            }
        }),
        off: safe(function (name, fn) {
            listeners[name] = (listeners[name] || []).filter(function (f) { return f !== fn; });
        })
    };

    var queue = prev && Array.isArray(prev.cmd) ? prev.cmd : [];
    win.adserve = api;
    queue.forEach(run);
})(window, document);
