// An ad unit's placement editors, one form a format (display, video,
// native, recommendation), and its admin-only ext editor through the spec's
// endpoint 1 (PATCH /api/developer/control/ad-units/{id}/ext). Their
// fields come from the OpenAPI document (tree.js); a PATCH of a format
// sends it whole, as the API replaces a nested object whole.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { api } from '../api.js';
import { fieldsOf, openapi } from '../schema.js';
import { SchemaForm } from '../form.js';

export const PLACEMENT_KINDS = ['display', 'video', 'native', 'recommendation'];
const EXT_PATH = '/api/developer/control/ad-units/{ad_unit_id}/ext';

function useDoc() {
    const [d, setD] = useState(null);
    useEffect(() => { openapi().then(setD, () => {}); }, []);
    return d;
}

export function PlacementEditors({ record, version, onSaved, loadOptions }) {
    const d = useDoc();
    if (!d) return null;
    const fields = fieldsOf(d, '/api/ad-units/{id}', 'patch');
    return html`<section aria-labelledby="formats-h">
        <h2 id="formats-h">Placements by format</h2>
        <p class="help">Each format's fields, enums, bounds and defaults are the API's; a field left empty takes its default.</p>
        ${PLACEMENT_KINDS.map((kind) => {
            const f = fields.find((x) => x.name === kind);
            if (!f) return null;
            const set = record[kind] !== undefined && record[kind] !== null;
            return html`<details class="format" key=${kind} id=${`format-${kind}`}>
                <summary>${kind.charAt(0).toUpperCase()}${kind.slice(1)} <span class="none">${set ? '(set)' : '(not set)'}</span></summary>
                <${SchemaForm} key=${version} idPrefix="edit-ad-units" edit fields=${[f]} initial=${record}
                    loadOptions=${loadOptions} submitLabel=${`Save the ${kind} placement`}
                    onSubmit=${async (body) => {
                        if (!Object.keys(body).length) return;
                        onSaved(await api('PATCH', `/api/ad-units/${record.id}`, body), `The ${kind} placement is saved.`);
                    }} />
            </details>`;
        })}
    </section>`;
}

export function ExtEditor({ record, version, onSaved, loadOptions }) {
    const d = useDoc();
    if (!d || !d.paths[EXT_PATH]) return null;
    const fields = fieldsOf(d, EXT_PATH, 'patch');
    return html`<section aria-labelledby="ext-h">
        <h2 id="ext-h">Extension (ext)</h2>
        <p class="help">Admins only, through the spec's endpoint 1: the whole ext is replaced by what is saved here.</p>
        <details class="format" id="format-ext">
            <summary>Edit ext</summary>
            <${SchemaForm} key=${version} idPrefix="ext" fields=${fields} initial=${{ ext: record.ext }}
                loadOptions=${loadOptions} submitLabel="Save ext"
                onSubmit=${async (body) => {
                    onSaved(await api('PATCH', `/api/developer/control/ad-units/${record.id}/ext`, { ext: body.ext || {} }),
                            'The ext is saved.');
                }} />
        </details>
    </section>`;
}
