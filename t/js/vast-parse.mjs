// A VAST document as a real player library reads it (run by t/114-video.t):
// DailyMotion's vast-client fetches the URL it is given, follows nothing
// else (no wrapper chain: the tag's URL would leave this machine), and
// this prints what it found as JSON: each ad's ids, impression and error
// URLs, its linear creative's duration, skip delay, click-through, tracking
// events and media files.
import { VASTClient } from '@dailymotion/vast-client';

const url = process.argv[2];
if (!url) {
    console.error('usage: node vast-parse.mjs <VAST URL>');
    process.exit(2);
}

const client = new VASTClient();
const res = await client.get(url, { wrapperLimit: 0, resolveAll: false, allowMultipleAds: true })
    .catch((err) => ({ error: String(err && err.message || err) }));
if (res.error) {
    console.log(JSON.stringify({ error: res.error }));
    process.exit(0);
}

const ads = res.ads.map((ad) => {
    const linear = ad.creatives.find((c) => c.type === 'linear');
    return {
        id: ad.id,
        system: ad.system && ad.system.value,
        title: ad.title,
        impressions: ad.impressionURLTemplates.map((i) => i.url),
        errors: ad.errorURLTemplates,
        vastAdTagURI: ad.nextWrapperURL || null,
        linear: linear && {
            duration: linear.duration,
            skipDelay: linear.skipDelay,
            clickThrough: linear.videoClickThroughURLTemplate && linear.videoClickThroughURLTemplate.url,
            clickTracking: (linear.videoClickTrackingURLTemplates || []).map((c) => c.url),
            tracking: Object.fromEntries(Object.entries(linear.trackingEvents)),
            mediaFiles: linear.mediaFiles.map((m) => ({
                url: m.fileURL, mime: m.mimeType, w: m.width, h: m.height, bitrate: m.bitrate,
                delivery: m.deliveryType,
            })),
        },
        companions: ad.creatives.filter((c) => c.type === 'companion')
            .flatMap((c) => c.variations.map((v) => ({ w: v.width, h: v.height,
                                                      img: v.staticResources.map((r) => r.url) }))),
    };
});
console.log(JSON.stringify({ ads, errorURLs: res.errorURLTemplates }));
