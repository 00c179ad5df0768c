// A targeting key's values (GET/POST/PATCH/DELETE /api/custom-targeting/
// keys/{key_id}/values): the list, a form generated from the OpenAPI
// document to add one, and on each row its description edited in place (a
// value's name cannot change: kv rules name it) and a delete button.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api, listAll } from '../api.js';
import { openapi, fieldsOf } from '../schema.js';
import { SchemaForm } from '../form.js';
import { Cell } from './list.js';

const PATH = '/api/custom-targeting/keys/{key_id}/values';

// One value's row; Edit turns its description into a field (empty saves
// null), saved with PATCH.
function ValueRow({ value, base, onSaved, onError, onDelete }) {
    const [text, setText] = useState(null);          // null: not editing
    const [busy, setBusy] = useState(false);
    const id = `value-${value.id}-description`;
    const save = async (e) => {
        e.preventDefault();
        setBusy(true);
        try {
            await api('PATCH', `${base}/${value.id}`, { description: text.trim() === '' ? null : text });
            setText(null);
            onSaved(value);
        } catch (err) {
            onError(err);
        }
        setBusy(false);
    };
    return html`<tr>
        <th scope="row">${value.name}</th>
        <td>${text === null ? html`<${Cell} value=${value.description} />`
            : html`<form id=${`${id}-form`} onSubmit=${save}>
                <label class="sr-only" for=${id}>Description of ${value.name}</label>
                <input id=${id} value=${text} onInput=${(e) => setText(e.currentTarget.value)} />
            </form>`}</td>
        <td><div class="actions">${text === null
            ? html`<button type="button" class="secondary" aria-label=${`Edit the description of ${value.name}`}
                onClick=${() => setText(value.description || '')}>Edit</button>`
            : html`<button type="submit" form=${`${id}-form`} disabled=${busy}>${busy ? 'Saving…' : 'Save'}</button>
                <button type="button" class="secondary" onClick=${() => setText(null)}>Cancel</button>`}
            <button type="button" class="danger" aria-label=${`Delete the value ${value.name}`} onClick=${() => onDelete(value)}>Delete</button>
        </div></td>
    </tr>`;
}

export function TargetingValues({ keyId }) {
    const base = `/api/custom-targeting/keys/${keyId}/values`;
    const [values, setValues] = useState(null);
    const [fields, setFields] = useState(null);
    const [notice, setNotice] = useState(null);
    const [version, setVersion] = useState(0);
    const load = () => listAll(base).then((l) => setValues(l.sort((a, b) => a.name.localeCompare(b.name))), (e) => setNotice({ ok: false, text: e.message }));
    useEffect(() => {
        load();
        openapi().then((d) => setFields(fieldsOf(d, PATH, 'post')), (e) => setNotice({ ok: false, text: e.message }));
    }, [keyId]);

    const remove = async (v) => {
        if (!confirm(`Delete the value ${v.name}?`)) return;
        try {
            await api('DELETE', `${base}/${v.id}`);
            setNotice({ ok: true, text: `Deleted ${v.name}.` });
            load();
        } catch (e) {
            setNotice({ ok: false, text: e.message });
        }
    };
    return html`<section aria-labelledby="values-h">
        <h2 id="values-h">Values</h2>
        ${notice && html`<p class=${notice.ok ? 'notice' : 'error'} role=${notice.ok ? 'status' : 'alert'}>${notice.text}</p>`}
        ${values && (values.length === 0 ? html`<p>None yet.</p>` : html`<div class="table-wrap"><table class="values">
            <caption>${values.length} ${values.length === 1 ? 'value' : 'values'}</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Description</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>${values.map((v) => html`<${ValueRow} key=${v.id} value=${v} base=${base} onDelete=${remove}
                onError=${(e) => setNotice({ ok: false, text: e.message })}
                onSaved=${() => { setNotice({ ok: true, text: `Saved the description of ${v.name}.` }); load(); }} />`)}</tbody>
        </table></div>`)}
        <h3>Add a value</h3>
        ${fields && html`<${SchemaForm} key=${version} idPrefix="new-value" fields=${fields} submitLabel="Add value"
            loadOptions=${() => Promise.resolve([])}
            onSubmit=${async (body) => {
                const made = await api('POST', base, body);
                setNotice({ ok: true, text: `Added ${made.name}.` });
                setVersion((n) => n + 1);
                load();
            }} />`}
    </section>`;
}
