// A targeting key's values (GET/POST/DELETE /api/custom-targeting/keys/
// {key_id}/values): the list, a form generated from the OpenAPI document to
// add one, and a delete button each.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api, listAll } from '../api.js';
import { openapi, fieldsOf } from '../schema.js';
import { SchemaForm } from '../form.js';
import { Cell } from './list.js';

const PATH = '/api/custom-targeting/keys/{key_id}/values';

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
            <tbody>${values.map((v) => html`<tr key=${v.id}>
                <th scope="row">${v.name}</th><td><${Cell} value=${v.description} /></td>
                <td><button type="button" class="danger" aria-label=${`Delete the value ${v.name}`} onClick=${() => remove(v)}>Delete</button></td>
            </tr>`)}</tbody>
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
