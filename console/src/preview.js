// A creative as it would show: an image as an <img>, HTML in an iframe
// sandboxed without any permission (no scripts, no same origin, no
// navigation), so the markup cannot reach the console or its tokens.
import { html } from './html.js';

export function CreativePreview({ creative }) {
    const { type, w, h } = creative;
    const size = { width: w, height: h };
    let body;
    if (type === 'IMAGE' && creative.image_url) {
        body = html`<img src=${creative.image_url} alt=${`the creative ${creative.name}`} ...${size} referrerpolicy="no-referrer" />`;
    } else if (type === 'HTML' && creative.html) {
        body = html`<iframe sandbox="" srcdoc=${creative.html} title=${`the creative ${creative.name}`} ...${size}></iframe>`;
    } else {
        body = html`<p>No preview for a ${type} creative yet.</p>`;
    }
    return html`<figure class="preview">
        <div class="preview-frame">${body}</div>
        <figcaption>${type}, ${w}×${h}</figcaption>
    </figure>`;
}
