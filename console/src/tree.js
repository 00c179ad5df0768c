// A form for a nested JSON value, generated from its OpenAPI schema: an
// ad unit's display, video, native and recommendation placements and its
// ext, a line item's targeting (key-values as an Expr tree), goal and
// frequency caps. Objects are fieldsets, arrays of objects repeatable
// groups, discriminated unions (Expr, a goal) a type select and the chosen
// variant's fields, enums selects, arrays of enums checkboxes; every bound,
// enum and default comes from the document. A value left alone stays
// undefined, so the API's default applies. Each control carries data-path,
// the path a 422 names ("targeting.kv.data[1].data.op"), for the form to
// put the error at.
import { useState } from 'preact/hooks';
import { html } from './html.js';
import { label } from './schema.js';

const types = (s) => (Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type]);

// a schema with its $ref followed (the referring member's own keywords
// kept) and a nullable oneOf [X, null] folded into X
export function resolve(d, s) {
    let out = s || {};
    for (;;) {
        if (out.$ref) {
            const { $ref, ...own } = out;
            out = { ...d.components.schemas[$ref.split('/').pop()], ...own };
            continue;
        }
        const alts = out.oneOf || out.anyOf;
        if (alts && !out.discriminator && !out.properties) {
            const real = alts.filter((a) => !(a.type === 'null'));
            if (real.length === 1) {
                const { oneOf, anyOf, ...own } = out;
                out = { ...real[0], ...own, nullable: real.length < alts.length };
                if (out.$ref) {
                    const { $ref, ...keep } = out;
                    out = { ...d.components.schemas[$ref.split('/').pop()], ...keep };
                }
                continue;
            }
        }
        return out;
    }
}

// which list a list of ids picks from, by the path it is at
const REF_PATHS = [
    [/(^|\.)ad_units\.(include|exclude)$/, 'ad-units'],
    [/(^|\.)placements$/, 'placements'],
    [/(^|\.)segments\.(include|exclude)$/, 'segments'],
];

// what one item of an array is called, where its name does not say
const ITEM = { data: 'condition', frequency_caps: 'frequency cap', ad_unit_sizes: 'size', fallback: 'fallback', comp: 'companion' };

// what control a schema gets
export function kindOf(d, s, path) {
    const r = resolve(d, s);
    const t = types(r).filter((x) => x !== 'null');
    if (r.discriminator || ((r.oneOf || r.anyOf) && !r.properties)) return 'union';
    if (r.enum) return 'enum';
    if (r.properties) return 'object';
    if (t.includes('array')) {
        const items = resolve(d, r.items);
        if (items.enum) return 'multi';
        if (items.format === 'uuid' && REF_PATHS.some(([re]) => re.test(path.replace(/\[\d+\]/g, '')))) return 'refs';
        const it = types(items);
        if (items.properties || items.oneOf || items.discriminator || it.includes('object') || it.includes('array')) return 'array';
        if (it.length === 0) return 'json';
        return 'scalars';
    }
    if (t.includes('boolean')) return 'bool';
    if (t.includes('integer') || t.includes('number')) return 'number';
    if (t.includes('string')) return 'text';
    return 'json';                               // an object of any members, or any JSON
}

// a path as an element id part: "targeting.kv.data[1]" -> "targeting-kv-data-1"
export const pathId = (path) => path.replace(/\]/g, '').replace(/[.[]/g, '-');

const show = (v) => (typeof v === 'object' ? JSON.stringify(v) : String(v));

function helpOf(r, kind) {
    const bits = [];
    if (r.description) bits.push(r.description);
    if (r.minimum !== undefined || r.maximum !== undefined) bits.push(`${r.minimum ?? '…'} to ${r.maximum ?? '…'}`);
    if (kind === 'scalars') bits.push('comma-separated');
    if (kind === 'json') bits.push('JSON, or plain text for a string');
    if (r.maxItems !== undefined && (kind === 'array' || kind === 'refs')) bits.push(`at most ${r.maxItems}`);
    if (r.default !== undefined && r.default !== null && !(Array.isArray(r.default) && r.default.length === 0)) bits.push(`default ${show(r.default)}`);
    return bits.join('; ');
}

// a text control's own text, kept while typed (a number half typed, JSON
// not yet closed); the value it stands for goes up on each keystroke
function useText(initial) {
    return useState(initial);
}

function scalarsText(v) {
    return Array.isArray(v) ? v.join(', ') : '';
}

function parseScalars(items, text) {
    const parts = text.split(/[,\n]/).map((x) => x.trim()).filter(Boolean);
    const numeric = types(items).some((x) => x === 'integer' || x === 'number');
    return parts.map((x) => (numeric && x !== '' && !Number.isNaN(Number(x)) ? Number(x) : x));
}

function parseJson(text) {
    if (text.trim() === '') return undefined;
    try {
        return JSON.parse(text);
    } catch {
        return text;                                  // plain text: a string
    }
}

// the error line of a node, when the form put the 422 there
function ErrorAt({ ctx, path, id }) {
    if (!ctx.error || ctx.error.at !== path) return null;
    const rest = ctx.error.path === path ? ctx.error.reason : `${ctx.error.path}: ${ctx.error.reason}`;
    return html`<p id=${`${id}-error`} class="field-error" role="alert">${rest}</p>`;
}

function Leaf({ d, s, r, kind, value, onChange, path, name, ctx, required }) {
    const id = `${ctx.idPrefix}-${pathId(path)}`;
    const hint = helpOf(r, kind);
    const bad = ctx.error && ctx.error.at === path;
    const described = [hint && `${id}-help`, bad && `${id}-error`].filter(Boolean).join(' ') || undefined;
    const common = { id, 'data-path': path, 'aria-describedby': described, 'aria-invalid': bad ? 'true' : undefined,
                     'aria-required': required ? 'true' : undefined };
    const [text, setText] = useText(kind === 'scalars' ? scalarsText(value)
        : kind === 'json' ? (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value, null, 1))
        : value === undefined || value === null ? '' : String(value));
    const typed = (e, parse) => {
        const x = e.currentTarget.value;
        setText(x);
        onChange(parse(x));
    };
    let control;
    switch (kind) {
    case 'enum': {
        const opts = r.enum.filter((o) => o !== null);
        control = html`<select ...${common} value=${value === undefined || value === null ? '' : String(value)}
            onChange=${(e) => { const x = e.currentTarget.value; onChange(x === '' ? undefined : opts.find((o) => String(o) === x)); }}>
            <option value="">${r.default !== undefined && r.default !== null ? `(default: ${show(r.default)})` : required ? '— choose —' : '(not set)'}</option>
            ${opts.map((o) => html`<option value=${String(o)}>${String(o)}</option>`)}
        </select>`;
        break;
    }
    case 'bool':
        control = html`<select ...${common} value=${value === undefined ? '' : String(value)}
            onChange=${(e) => { const x = e.currentTarget.value; onChange(x === '' ? undefined : x === 'true'); }}>
            <option value="">${r.default !== undefined ? `(default: ${r.default ? 'yes' : 'no'})` : '(not set)'}</option>
            <option value="true">yes</option><option value="false">no</option>
        </select>`;
        break;
    case 'number':
        control = html`<input type="number" inputmode="decimal" ...${common} value=${text}
            min=${r.minimum} max=${r.maximum} step=${types(r).includes('integer') ? 1 : 'any'}
            placeholder=${r.default !== undefined && r.default !== null ? String(r.default) : undefined}
            onInput=${(e) => typed(e, (x) => (x === '' ? undefined : Number(x)))} />`;
        break;
    case 'scalars':
        // a key-value comparison's key: the custom targeting keys offered
        if (name === 'lhs') {
            const keys = ctx.options('targeting-keys') || [];
            control = html`<input type="text" ...${common} value=${text} list=${`${id}-keys`}
                onInput=${(e) => typed(e, (x) => (x.trim() === '' ? undefined : parseScalars(resolve(d, r.items), x)))} />
                <datalist id=${`${id}-keys`}>${keys.map((k) => html`<option value=${k.name} />`)}</datalist>`;
            break;
        }
        control = html`<input type="text" ...${common} value=${text}
            placeholder=${Array.isArray(r.default) && r.default.length ? r.default.join(', ') : undefined}
            onInput=${(e) => typed(e, (x) => (x.trim() === '' ? undefined : parseScalars(resolve(d, r.items), x)))} />`;
        break;
    case 'json':
        control = html`<textarea rows="2" spellcheck="false" class="code" ...${common} value=${text}
            onInput=${(e) => typed(e, parseJson)}></textarea>`;
        break;
    default:
        control = html`<input type=${r.format === 'uri' ? 'url' : 'text'} autocomplete="off" ...${common} value=${text}
            maxlength=${r.maxLength} placeholder=${r.default !== undefined && r.default !== null ? String(r.default) : undefined}
            onInput=${(e) => typed(e, (x) => (x === '' ? undefined : x))} />`;
    }
    return html`<div class=${`field field-${kind}`}>
        <label for=${id}>${label(name)}${required && html`<span class="req" aria-hidden="true"> *</span>`}</label>
        ${control}
        ${hint && html`<small id=${`${id}-help`} class="help">${hint}</small>`}
        <${ErrorAt} ctx=${ctx} path=${path} id=${id} />
    </div>`;
}

// checkboxes: an array of enum values, or of ids from a list
function Choices({ r, choices, value, onChange, path, name, ctx }) {
    const id = `${ctx.idPrefix}-${pathId(path)}`;
    const chosen = new Set(Array.isArray(value) ? value : []);
    const hint = helpOf(r, 'multi');
    const toggle = (v, on) => onChange(choices.map((c) => c.value).filter((x) => (x === v ? on : chosen.has(x))));
    return html`<fieldset class="choices" id=${id} data-path=${path} tabindex="-1"
            aria-describedby=${hint ? `${id}-help` : undefined}>
        <legend>${label(name)}</legend>
        ${choices.length === 0 && html`<p class="none">None to choose from.</p>`}
        ${choices.map((c, i) => html`<span class="choice" key=${String(c.value)}>
            <input type="checkbox" id=${`${id}-${i}`} value=${String(c.value)} checked=${chosen.has(c.value)}
                onChange=${(e) => toggle(c.value, e.currentTarget.checked)} />
            <label for=${`${id}-${i}`}>${c.label}</label>
        </span>`)}
        ${hint && html`<small id=${`${id}-help`} class="help">${hint}</small>`}
        <${ErrorAt} ctx=${ctx} path=${path} id=${id} />
    </fieldset>`;
}

function Refs(props) {
    const { r, ctx, path } = props;
    const ref = REF_PATHS.find(([re]) => re.test(path.replace(/\[\d+\]/g, '')))[1];
    const list = ctx.options(ref);
    if (list === undefined) return html`<p role="status">Loading ${ref.replace('-', ' ')}…</p>`;
    if (list === null) return html`<${Leaf} ...${props} kind="scalars" />`;    // not ours to list: ids typed
    const known = new Set(list.map((o) => o.id));
    const extra = (Array.isArray(props.value) ? props.value : []).filter((v) => !known.has(v)).map((v) => ({ value: v, label: v }));
    return html`<${Choices} ...${props} r=${r} choices=${[...list.map((o) => ({ value: o.id, label: o.name })), ...extra]} />`;
}

function ObjectNode({ d, r, value, onChange, path, name, ctx, top, omit, inner }) {
    const id = `${ctx.idPrefix}-${pathId(path)}`;
    const v = value && typeof value === 'object' && !Array.isArray(value) ? value : {};
    const required = new Set(r.required || []);
    const set = (k, x) => {
        const next = { ...v };
        if (x === undefined) delete next[k];
        else next[k] = x;
        onChange(next);
    };
    const props = Object.entries(r.properties).filter(([k, p]) => k !== omit && !resolve(d, p).readOnly);
    const hint = r.description;
    const body = html`
        ${hint && html`<small id=${`${id}-help`} class="help">${hint}</small>`}
        <${ErrorAt} ctx=${ctx} path=${path} id=${id} />
        ${props.map(([k, p]) => html`<${Node} key=${k} d=${d} s=${p} value=${v[k]} onChange=${(x) => set(k, x)}
            path=${path ? `${path}.${k}` : k} name=${k} ctx=${ctx} required=${required.has(k)} />`)}`;
    if (inner) return html`<div class="variant">${body}</div>`;      // a union's chosen variant
    if (top) {
        return html`<fieldset class="tree" id=${id} data-path=${path} tabindex="-1"><legend>${label(name)}</legend>${body}</fieldset>`;
    }
    // nested objects fold away, open when set
    return html`<details class="tree-object" open=${value !== undefined && value !== null} data-path=${path} id=${id}>
        <summary>${label(name)}${value === undefined || value === null ? html` <span class="none">(not set)</span>` : ''}</summary>
        <fieldset class="tree"><legend class="sr-only">${label(name)}</legend>${body}</fieldset>
    </details>`;
}

function variantsOf(d, r) {
    const alts = (r.oneOf || r.anyOf || []).filter((a) => a.type !== 'null');
    const key = r.discriminator ? r.discriminator.propertyName : 'type';
    return {
        key,
        list: alts.map((a) => {
            const v = resolve(d, a);
            const tag = v.properties && v.properties[key] && resolve(d, v.properties[key]).enum;
            return { tag: tag ? tag[0] : null, schema: v };
        }).filter((x) => x.tag !== null),
    };
}

function UnionNode({ d, r, value, onChange, path, name, ctx, required }) {
    const id = `${ctx.idPrefix}-${pathId(path)}`;
    const { key, list } = variantsOf(d, r);
    if (list.length === 0) return html`<${Leaf} d=${d} r=${r} kind="json" value=${value} onChange=${onChange} path=${path} name=${name} ctx=${ctx} />`;
    const v = value && typeof value === 'object' ? value : null;
    const chosen = v && list.find((x) => x.tag === v[key]);
    const typeId = `${id}-${key}`;
    return html`<fieldset class="tree union" id=${id} data-path=${path} tabindex="-1">
        <legend>${label(name)}</legend>
        ${r.description && html`<small class="help">${r.description}</small>`}
        <div class="field field-enum">
            <label for=${typeId}>${label(name)}: ${key}${required && html`<span class="req" aria-hidden="true"> *</span>`}</label>
            <select id=${typeId} data-path=${`${path}.${key}`} value=${chosen ? chosen.tag : ''}
                onChange=${(e) => { const x = e.currentTarget.value; onChange(x === '' ? (r.nullable ? null : undefined) : { [key]: x }); }}>
                <option value="">${r.default !== undefined ? `(default: ${show(r.default)})` : '(not set)'}</option>
                ${list.map((x) => html`<option value=${x.tag}>${x.tag}</option>`)}
            </select>
        </div>
        <${ErrorAt} ctx=${ctx} path=${path} id=${id} />
        ${chosen && html`<${ObjectNode} key=${chosen.tag} d=${d} r=${chosen.schema} value=${v} onChange=${onChange}
            path=${path} name=${name} ctx=${{ ...ctx, error: ctx.error && ctx.error.at === path ? null : ctx.error }} omit=${key} inner />`}
    </fieldset>`;
}

function ArrayNode({ d, r, value, onChange, path, name, ctx }) {
    const id = `${ctx.idPrefix}-${pathId(path)}`;
    const list = Array.isArray(value) ? value : [];
    const items = resolve(d, r.items);
    const one = ITEM[name] || label(name).replace(/s$/, '').toLowerCase();
    const hint = helpOf(r, 'array');
    // keys that survive a removal in the middle
    const [keys, setKeys] = useState(() => list.map((_, i) => i));
    const [next, setNext] = useState(list.length);
    const add = () => {
        const fresh = items.discriminator || items.oneOf ? { [variantsOf(d, items).key]: variantsOf(d, items).list[0].tag } : {};
        setKeys([...keys, next]);
        setNext(next + 1);
        onChange([...list, fresh]);
    };
    const remove = (i) => {
        setKeys(keys.filter((_, j) => j !== i));
        onChange(list.filter((_, j) => j !== i));
    };
    return html`<fieldset class="tree array" id=${id} data-path=${path} tabindex="-1">
        <legend>${label(name)}</legend>
        ${hint && html`<small class="help">${hint}</small>`}
        <${ErrorAt} ctx=${ctx} path=${path} id=${id} />
        ${list.length === 0 && html`<p class="none">None.</p>`}
        <ol class="items">${list.map((item, i) => html`<li key=${keys[i] ?? `n${i}`}>
            <${Node} d=${d} s=${r.items} value=${item} onChange=${(x) => onChange(list.map((y, j) => (j === i ? x : y)))}
                path=${`${path}[${i}]`} name=${`${one} ${i + 1}`} ctx=${ctx} top />
            <button type="button" class="small secondary" onClick=${() => remove(i)}>Remove ${one} ${i + 1}<span class="sr-only"> of ${path}</span></button>
        </li>`)}</ol>
        <button type="button" class="small secondary" disabled=${r.maxItems !== undefined && list.length >= r.maxItems}
            onClick=${add}>Add ${one}<span class="sr-only"> to ${path}</span></button>
    </fieldset>`;
}

// one node of the value, by its schema's kind
export function Node(props) {
    const { d, s, path } = props;
    const r = resolve(d, s);
    const kind = kindOf(d, s, path);
    switch (kind) {
    // a required object is always shown (an Expr's comparison); an optional one folds
    case 'object': return html`<${ObjectNode} ...${props} r=${r} top=${props.top || props.required} />`;
    case 'union': return html`<${UnionNode} ...${props} r=${r} />`;
    case 'array': return html`<${ArrayNode} ...${props} r=${r} />`;
    case 'multi': return html`<${Choices} ...${props} r=${r} choices=${resolve(d, r.items).enum.map((x) => ({ value: x, label: String(x) }))} />`;
    case 'refs': return html`<${Refs} ...${props} r=${r} kind="refs" />`;
    default: return html`<${Leaf} ...${props} r=${r} kind=${kind} />`;
    }
}

// where in the form a 422's path lands: the deepest element whose
// data-path is a prefix of it (at a member or index boundary); folded
// sections around it are opened. Returns that element, or null.
export function placeError(root, path) {
    let best = null;
    for (const el of root.querySelectorAll('[data-path]')) {
        const p = el.getAttribute('data-path');
        if ((path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[`)) && (!best || p.length > best.getAttribute('data-path').length)) best = el;
    }
    for (let up = best && best.parentElement; up; up = up.parentElement) {
        if (up.tagName === 'DETAILS') up.open = true;
    }
    return best;
}
