// One record: create (POST) and edit (PATCH) forms from the OpenAPI
// document, its state changes as buttons offering only the allowed ones,
// the review of creatives and line items, a creative's preview, and the
// records under it (an order's line items, a line item's LICAs).
import { useEffect, useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { html } from '../html.js';
import { api } from '../api.js';
import { openapi, fieldsOf, transitionsOf } from '../schema.js';
import { RESOURCES, apiPath, transitionsFor } from '../resources.js';
import { useSession } from '../session.js';
import { optionsLoader } from '../options.js';
import { SchemaForm } from '../form.js';
import { CreativePreview } from '../preview.js';
import { Cell } from './list.js';
import { TagSnippet } from './tag-snippet.js';
import { TargetingValues } from './targeting-values.js';
import { ExtEditor, PlacementEditors } from './ad-unit-forms.js';
import { LineItemDelivery, OrderDelivery } from './delivery.js';
import { SourceOverTime } from './ad-source-figures.js';

function useFields(path, method) {
    const [fields, setFields] = useState(null);
    const [error, setError] = useState(null);
    useEffect(() => {
        openapi().then((d) => setFields(fieldsOf(d, path, method)), (e) => setError(e.message));
    }, [path, method]);
    return [fields, error];
}

export function CreatePage({ res, prefill = {} }) {
    const conf = RESOURCES[res];
    const user = useSession();
    const [, navigate] = useLocation();
    const [fields, error] = useFields(apiPath(res), 'post');
    const initial = { ...prefill };
    if (user.role === 'advertiser' && initial.advertiser_id === undefined) initial.advertiser_id = user.advertiser_id;
    return html`<h1 tabindex="-1">New ${conf.one}</h1>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${fields && html`<${SchemaForm} idPrefix=${`new-${res}`} fields=${fields.filter((f) => f.name !== 'approval' && !(conf.omit || []).includes(f.name))} initial=${initial}
            loadOptions=${optionsLoader(user)} submitLabel=${`Create ${conf.one}`}
            onSubmit=${async (body) => {
                const made = await api('POST', apiPath(res), body);
                navigate(`/${res}/${made.id}`);
            }} />`}`;
}

function Children({ title, res, field, id, columns }) {
    const [items, setItems] = useState(null);
    useEffect(() => {
        api('GET', `/api/${res}?${field}=${encodeURIComponent(id)}&limit=100`).then((d) => setItems(d.items), () => setItems([]));
    }, [res, id]);
    return html`<section aria-labelledby=${`${res}-under`}>
        <h2 id=${`${res}-under`}>${title}</h2>
        <p><${Link} class="button" href=${`/${res}/new/${field}/${id}`}>New ${RESOURCES[res].one}</${Link}></p>
        ${items && (items.length === 0 ? html`<p>None yet.</p>` : html`<ul class="children">
            ${items.map((i) => html`<li key=${i.id}><${Link} href=${`/${res}/${i.id}`}>${columns.map((c) => html`<${Cell} value=${i[c]} /> `)}</${Link}></li>`)}
        </ul>`)}
    </section>`;
}

export function RecordPage({ res, id }) {
    const conf = RESOURCES[res];
    const user = useSession();
    const [, navigate] = useLocation();
    const [record, setRecord] = useState(null);
    const [error, setError] = useState(null);
    const [notice, setNotice] = useState(null);
    const [fields] = useFields(`${apiPath(res)}/{id}`, 'patch');
    const [version, setVersion] = useState(0);     // a new form after each change
    const [machine, setMachine] = useState(null);   // the API's x-transitions
    useEffect(() => {
        openapi().then((d) => setMachine(transitionsOf(d, `${apiPath(res)}/{id}`)), () => setMachine(null));
    }, [res]);

    useEffect(() => {
        setRecord(null);
        setError(null);
        api('GET', `${apiPath(res)}/${id}`).then(setRecord, setError);
    }, [res, id]);

    if (error) {
        return error.status === 404
            ? html`<h1 tabindex="-1">Not found</h1><p>There is no such ${conf.one}, or it is not one you may see.</p>`
            : html`<h1 tabindex="-1">${conf.title}</h1><p class="error" role="alert">${error.message}</p>`;
    }
    if (!record) return html`<h1 tabindex="-1">${conf.one}</h1><p role="status">Loading…</p>`;

    const change = async (body, what) => {
        setNotice(null);
        try {
            const after = await api('PATCH', `${apiPath(res)}/${id}`, body);
            setRecord(after);
            setVersion((v) => v + 1);
            setNotice({ ok: true, text: what });
        } catch (e) {
            setNotice({ ok: false, text: e.message });
        }
    };
    const remove = async () => {
        if (!confirm(`Delete this ${conf.one}?`)) return;
        try {
            await api('DELETE', `${apiPath(res)}/${id}`);
            navigate(`/${res}`);
        } catch (e) {
            setNotice({ ok: false, text: e.message });
        }
    };
    const saved = (after, text) => {
        setRecord(after);
        setVersion((v) => v + 1);
        setNotice({ ok: true, text });
    };
    const next = transitionsFor(conf, record, user, machine);
    const staff = user.role !== 'advertiser';
    const title = record.name || record.email || record.code || record.id;

    return html`<h1 tabindex="-1">${title}</h1>
        <p class="crumbs"><${Link} href=${`/${res}`}>${conf.title}</${Link}> · <span class="mono">${record.id}</span></p>
        ${notice && html`<p class=${notice.ok ? 'notice' : 'error'} role=${notice.ok ? 'status' : 'alert'}>${notice.text}</p>`}
        ${conf.state && html`<section class="state" aria-labelledby="state-h">
            <h2 id="state-h">Status: <span class="badge" data-state=${record[conf.state]}>${record[conf.state]}</span></h2>
            ${next.length ? html`<div class="actions" role="group" aria-label="Change the status">
                ${next.map((s) => html`<button type="button" onClick=${() => change({ [conf.state]: s }, `Now ${s}.`)}>${s === 'ARCHIVED' ? 'Archive' : `Set ${s}`}</button>`)}
            </div>` : html`<p>No status change is possible from here.</p>`}
        </section>`}
        ${conf.review && html`<section class="review" aria-labelledby="review-h">
            <h2 id="review-h">Review: <span class="badge" data-state=${record.approval}>${record.approval}</span></h2>
            ${staff && html`<div class="actions" role="group" aria-label="Review">
                ${record.approval !== 'APPROVED' && html`<button type="button" onClick=${() => change({ approval: 'APPROVED' }, 'Approved.')}>Approve</button>`}
                ${record.approval !== 'REJECTED' && html`<button type="button" onClick=${() => change({ approval: 'REJECTED' }, 'Rejected.')}>Reject</button>`}
            </div>`}
        </section>`}
        ${conf.preview && html`<section aria-labelledby="preview-h"><h2 id="preview-h">Preview</h2><${CreativePreview} creative=${record} /></section>`}
        ${res === 'orders' && html`<${Children} title="Line items" res="line-items" field="order_id" id=${id} columns=${['name', 'status']} />`}
        ${res === 'orders' && html`<${OrderDelivery} key=${`${record.id}-${version}`} order=${record} />`}
        ${res === 'line-items' && html`<${LineItemDelivery} key=${`${record.id}-${version}`} lineItem=${record} />`}
        ${res === 'ad-sources' && html`<${SourceOverTime} sourceId=${id} />`}
        ${res === 'line-items' && html`<${Children} title="Creatives (LICAs)" res="licas" field="line_item_id" id=${id} columns=${['creative_id', 'status']} />`}
        ${res === 'ad-units' && html`<${TagSnippet} adUnitId=${id} />`}
        ${res === 'targeting-keys' && html`<${TargetingValues} keyId=${id} />`}
        <section aria-labelledby="edit-h">
            <h2 id="edit-h">Edit</h2>
            ${fields && html`<${SchemaForm} key=${version} idPrefix=${`edit-${res}`} edit fields=${fields.filter((f) => f.name !== conf.state && f.name !== 'approval' && !(conf.omit || []).includes(f.name))}
                initial=${record} loadOptions=${optionsLoader(user)} submitLabel="Save changes"
                onSubmit=${async (body) => {
                    const after = await api('PATCH', `${apiPath(res)}/${id}`, body);
                    setRecord(after);
                    setVersion((v) => v + 1);
                    setNotice({ ok: true, text: 'Saved.' });
                }} />`}
        </section>
        ${res === 'ad-units' && html`<${PlacementEditors} record=${record} version=${version} loadOptions=${optionsLoader(user)} onSaved=${saved} />`}
        ${res === 'ad-units' && user.role === 'admin' && html`<${ExtEditor} record=${record} version=${version} loadOptions=${optionsLoader(user)} onSaved=${saved} />`}
        <section aria-labelledby="danger-h"><h2 id="danger-h">Delete</h2>
            <button type="button" class="danger" onClick=${remove}>Delete this ${conf.one}</button>
        </section>`;
}
