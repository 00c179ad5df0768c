// The decision explainer (POST /api/explain/{tagid}, admins and
// operators): pick an ad unit, describe the serving request with fields
// (user, device, key-values) or edit its JSON, and see which line item
// would serve and why each other one would not. Nothing is counted or
// recorded by asking.
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { html } from '../html.js';
import { api, listAll } from '../api.js';
import { Cell } from './list.js';

const DECISIONS = {
    won: 'would serve',
    tied: 'tied for the best eCPM: a random draw picks',
    outranked: 'able to serve, but a higher eCPM wins',
    lower_priority: 'able to serve, but a better type or priority has an ad',
    held_back: 'held back',
};
const REASONS = {
    flight: 'outside its flight dates',
    targeting: 'its targeting does not match this request',
    goal_reached: 'its goal is reached',
    frequency_cap: 'the user reached its frequency cap',
    pacing: 'pacing: no budget left now, or a share of 0',
    floor: 'its eCPM is under the floor',
    size: 'no size of the ad unit fits the creative',
    bcat: 'the request blocks the creative\'s category',
};
const why = (c, caps) => {
    const text = DECISIONS[c.decision] || c.decision;
    if (c.reason === 'frequency_cap' && caps === 'unknown') return `${text}: its frequency cap cannot be checked without a user.id`;
    return c.reason ? `${text}: ${REASONS[c.reason] || c.reason}` : text;
};

// The request's JSON is the one source of truth: each field shows its
// member, and a change writes the member back (an empty field removes it,
// and the objects it leaves empty). A request that is not JSON disables
// the fields until it is again.
function member(o, path) {
    return path.reduce((x, k) => (x && typeof x === 'object' && !Array.isArray(x) ? x[k] : undefined), o);
}

function withMember(o, path, value) {
    const copy = { ...o };
    const [k, ...rest] = path;
    if (rest.length === 0) {
        if (value === undefined) delete copy[k];
        else copy[k] = value;
        return copy;
    }
    const inner = withMember(copy[k] && typeof copy[k] === 'object' && !Array.isArray(copy[k]) ? copy[k] : {}, rest, value);
    if (Object.keys(inner).length === 0) delete copy[k];
    else copy[k] = inner;
    return copy;
}

const GENDERS = [['', 'not said'], ['F', 'F'], ['M', 'M'], ['O', 'O']];

function RequestFields({ request, onChange }) {
    const off = request === null;
    const o = request || {};
    const set = (path, value) => onChange(withMember(o, path, value === '' ? undefined : value));
    const text = (path) => {
        const v = member(o, path);
        return typeof v === 'string' || typeof v === 'number' ? String(v) : '';
    };
    const kv = Object.entries(member(o, ['ext', 'kv']) || {});
    const setKv = (rows) => set(['ext', 'kv'], rows.length ? Object.fromEntries(rows) : undefined);
    const kvText = (v) => (Array.isArray(v) ? v.join(', ') : String(v));
    return html`<fieldset class="tree request-fields" disabled=${off}>
        <legend>The request</legend>
        ${off && html`<p class="help">Make the JSON below valid to edit these.</p>`}
        <div class="field"><label for="explain-user-id">User id</label>
            <input id="explain-user-id" value=${text(['user', 'id'])} aria-describedby="explain-user-id-help"
                onInput=${(e) => set(['user', 'id'], e.currentTarget.value)} />
            <small class="help" id="explain-user-id-help">Frequency caps and segments are read for this user.</small></div>
        <div class="field"><label for="explain-yob">Year of birth</label>
            <input id="explain-yob" type="number" min="1900" max="2100" value=${text(['user', 'yob'])}
                onInput=${(e) => set(['user', 'yob'], e.currentTarget.value === '' ? '' : Number(e.currentTarget.value))} /></div>
        <div class="field"><label for="explain-gender">Gender</label>
            <select id="explain-gender" value=${text(['user', 'gender'])} onChange=${(e) => set(['user', 'gender'], e.currentTarget.value)}>
                ${GENDERS.map(([v, label]) => html`<option value=${v} key=${v}>${label}</option>`)}
            </select></div>
        <div class="field"><label for="explain-ua">User agent</label>
            <input id="explain-ua" value=${text(['device', 'ua'])} onInput=${(e) => set(['device', 'ua'], e.currentTarget.value)} /></div>
        <fieldset class="tree"><legend>Key-values (ext.kv)</legend>
            ${kv.map(([k, v], i) => html`<div class="kv-row" key=${i}>
                <label class="sr-only" for=${`explain-kv-${i}-key`}>Key ${i + 1}</label>
                <input id=${`explain-kv-${i}-key`} placeholder="key" value=${k}
                    onInput=${(e) => setKv(kv.map((r, j) => (j === i ? [e.currentTarget.value, r[1]] : r)))} />
                <label class="sr-only" for=${`explain-kv-${i}-value`}>Value ${i + 1}</label>
                <input id=${`explain-kv-${i}-value`} placeholder="value" value=${kvText(v)}
                    onInput=${(e) => setKv(kv.map((r, j) => (j === i ? [r[0], e.currentTarget.value] : r)))} />
                <button type="button" class="small secondary" aria-label=${`Remove key-value ${i + 1}`}
                    onClick=${() => setKv(kv.filter((_, j) => j !== i))}>Remove</button>
            </div>`)}
            <button type="button" class="small secondary" disabled=${kv.some(([k]) => k === '')}
                onClick=${() => setKv([...kv, ['', '']])}>Add a key-value</button>
        </fieldset>
    </fieldset>`;
}

function LineItem({ id, names }) {
    return html`<${Link} href=${`/line-items/${id}`}>${names[id] || id}</${Link}>`;
}

function Answer({ answer, names }) {
    const items = answer.line_items || [];
    return html`<section aria-labelledby="answer-h" class="explain-answer">
        <h2 id="answer-h">The decision</h2>
        <p id="explain-winner" role="status">${answer.winner
            ? html`Would serve: <strong><${LineItem} id=${answer.winner} names=${names} /></strong>.`
            : 'Nothing would serve this request.'}</p>
        <dl class="facts">
            <dt>Frequency caps</dt><dd>${{ none: 'no capped line item on this unit', known: 'read for this user', unknown: 'unknown (no user.id): capped line items held back' }[answer.caps] || answer.caps}</dd>
            <dt>At</dt><dd>${new Date(answer.time * 1000).toISOString().replace('T', ' ').replace('.000Z', ' UTC')}</dd>
        </dl>
        ${items.length === 0 ? html`<p>No line item is a candidate here (it must be ACTIVE, its order APPROVED, with an ACTIVE LICA to an APPROVED creative).</p>`
            : html`<div class="table-wrap"><table class="explain">
            <caption>${items.length} candidate${items.length === 1 ? '' : 's'}</caption>
            <thead><tr><th scope="col">Line item</th><th scope="col">Decision</th><th scope="col">eCPM</th><th scope="col">Type</th>
                <th scope="col">Priority</th><th scope="col">Creatives</th></tr></thead>
            <tbody>${items.map((c) => html`<tr key=${c.line_item_id} data-decision=${c.decision}>
                <th scope="row"><${LineItem} id=${c.line_item_id} names=${names} /></th>
                <td><span class="badge" data-state=${c.decision === 'won' ? 'ACTIVE' : c.decision === 'held_back' ? 'PAUSED' : ''}>${c.decision}</span> ${why(c, answer.caps)}
                    ${c.pacing && html`<br /><span class="none">share <${Cell} value=${c.pacing.share} />, budget left <${Cell} value=${c.pacing.budget_left} />${c.pacing.goal_reached ? ', goal reached' : ''}</span>`}</td>
                <td>${c.ecpm} <span class="none">(${c.cost_type} ${c.bid})</span></td>
                <td>${c.type}</td><td>${c.priority}</td><td>${c.creatives}</td>
            </tr>`)}</tbody>
        </table></div>`}
        ${(answer.excluded || []).length > 0 && html`<h3>Never served here</h3>
            <ul class="excluded">${answer.excluded.map((x) => html`<li key=${`${x.line_item_id}-${x.creative_id}`}>
                <${LineItem} id=${x.line_item_id} names=${names} />, creative <${Link} href=${`/creatives/${x.creative_id}`}><span class="mono">${x.creative_id}</span></${Link}>: ${REASONS[x.reason] || x.reason}</li>`)}</ul>`}
    </section>`;
}

export function Explain() {
    const [units, setUnits] = useState(null);
    const [names, setNames] = useState({});
    const [unit, setUnit] = useState('');
    const [body, setBody] = useState('{\n  "user": {"id": "user-1"}\n}');
    const [answer, setAnswer] = useState(null);
    const [error, setError] = useState(null);
    const [busy, setBusy] = useState(false);
    let request = null;
    try {
        const v = JSON.parse(body);
        request = v && typeof v === 'object' && !Array.isArray(v) ? v : null;
    } catch (err) { /* the fields wait for valid JSON */ }
    useEffect(() => {
        listAll('/api/ad-units').then(setUnits, (e) => setError(e.message));
        listAll('/api/line-items').then((l) => setNames(Object.fromEntries(l.map((i) => [i.id, i.name]))), () => {});
    }, []);

    async function submit(e) {
        e.preventDefault();
        setError(null);
        setAnswer(null);
        let asked;
        try {
            asked = JSON.parse(body);
        } catch (err) {
            setError(`The request is not valid JSON: ${err.message}`);
            return;
        }
        setBusy(true);
        try {
            setAnswer(await api('POST', `/api/explain/${encodeURIComponent(unit)}`, asked));
        } catch (err) {
            setError(err.message);
        }
        setBusy(false);
    }

    return html`<h1 tabindex="-1">Decision explainer</h1>
        <p>Which line item would serve an ad unit's request now, and why each other one would not. Nothing is counted.</p>
        <form onSubmit=${submit} class="explain-form">
            <div class="field">
                <label for="explain-unit">Ad unit</label>
                <select id="explain-unit" value=${unit} required onChange=${(e) => setUnit(e.currentTarget.value)}>
                    <option value="">— choose —</option>
                    ${(units || []).map((u) => html`<option value=${u.id} key=${u.id}>${u.name} (${u.code})</option>`)}
                </select>
            </div>
            <${RequestFields} request=${request} onChange=${(o) => setBody(JSON.stringify(o, null, 2))} />
            <div class="field">
                <label for="explain-request">Request (JSON, as the SDK sends it)</label>
                <textarea id="explain-request" class="code" rows="8" spellcheck="false" value=${body}
                    aria-describedby="explain-request-help" onInput=${(e) => setBody(e.currentTarget.value)}></textarea>
                <small class="help" id="explain-request-help">The body of POST /app/v0/ad/{ad unit}, as the fields above make it; members they do not show can be written here.</small>
            </div>
            <button type="submit" disabled=${busy || !unit}>${busy ? 'Asking…' : 'Explain'}</button>
        </form>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${answer && html`<${Answer} answer=${answer} names=${names} />`}`;
}
