// A form generated from the OpenAPI fields of one request body (schema.js):
// one labelled control per field, its description and default as help, and
// a 422's detail shown at the field its path names.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from './html.js';
import { ApiError } from './api.js';
import { fromInput, label, toInput } from './schema.js';
import { Node, placeError } from './tree.js';

function Control({ field, id, value, onInput, invalid, described, options, ctx }) {
    const common = {
        id, name: field.name, 'aria-describedby': described, 'aria-invalid': invalid ? 'true' : undefined,
        'aria-required': field.required ? 'true' : undefined,
    };
    const set = (e) => onInput(field.kind === 'bool' ? e.currentTarget.checked : e.currentTarget.value);
    switch (field.kind) {
    case 'tree':
        return html`<${Node} d=${field.doc} s=${field.schema} value=${value} onChange=${onInput} path=${field.name}
            name=${field.name} ctx=${ctx} required=${field.required} top />`;
    case 'bool':
        return html`<input type="checkbox" ...${common} checked=${value} onChange=${set} />`;
    case 'enum':
        return html`<select ...${common} value=${value} onChange=${set}>
            <option value="">${field.required ? '— choose —' : `(default${field.default !== undefined ? `: ${field.default}` : ''})`}</option>
            ${field.options.map((o) => html`<option value=${String(o)}>${String(o)}</option>`)}
        </select>`;
    case 'ref':
        return html`<select ...${common} value=${value} onChange=${set}>
            <option value="">${field.required ? '— choose —' : '(none)'}</option>
            ${(options || []).map((o) => html`<option value=${o.id}>${o.name || o.code || o.id}</option>`)}
        </select>`;
    case 'refs': {
        // one checkbox a record, in a group the field's label names
        const chosen = new Set(value);
        const toggle = (oid, on) => onInput((options || []).map((o) => o.id).filter((x) => (x === oid ? on : chosen.has(x))));
        return html`<fieldset class="refs" id=${id} aria-describedby=${described} aria-invalid=${common['aria-invalid']}>
            <legend class="sr-only">${label(field.name)}</legend>
            ${options && options.length === 0 && html`<p class="none">None to choose from.</p>`}
            ${(options || []).map((o, i) => html`<div class="ref-choice" key=${o.id}>
                <input type="checkbox" id=${`${id}-${i}`} name=${field.name} value=${o.id} checked=${chosen.has(o.id)}
                    onChange=${(e) => toggle(o.id, e.currentTarget.checked)} />
                <label for=${`${id}-${i}`}>${o.name}</label>
            </div>`)}
        </fieldset>`;
    }
    case 'number':
        return html`<input type="number" inputmode="decimal" ...${common} value=${value}
            min=${field.min} max=${field.max} step=${field.step} onInput=${set} />`;
    case 'datetime':
        return html`<input type="datetime-local" ...${common} value=${value} onInput=${set} />`;
    case 'list':
        return html`<textarea rows="3" ...${common} value=${value} onInput=${set}></textarea>`;
    case 'json':
    case 'textarea':
        return html`<textarea rows=${field.kind === 'json' ? 6 : 8} spellcheck="false" class="code" ...${common}
            value=${value} onInput=${set}></textarea>`;
    default:
        return html`<input type=${field.secret ? 'password' : ({ uri: 'url', email: 'email' }[field.format] || 'text')}
            autocomplete=${field.secret ? 'new-password' : 'off'} ...${common} value=${value}
            maxlength=${field.maxLength} onInput=${set} />`;
    }
}

function help(field) {
    const bits = [];
    if (field.description) bits.push(field.description);
    if (field.kind === 'list') bits.push('one per line');
    if (field.kind === 'json') bits.push('JSON');
    if (field.kind === 'datetime') bits.push('your local time');
    if (field.min !== undefined || field.max !== undefined) bits.push(`${field.min ?? '…'} to ${field.max ?? '…'}`);
    if (field.default !== undefined && field.default !== null && field.kind !== 'bool') {
        bits.push(`default ${typeof field.default === 'object' ? JSON.stringify(field.default) : field.default}`);
    }
    return bits.join('; ');
}

// fields: schema.js fieldsOf; initial: the record (edit) or {} (create);
// onSubmit(body) sends it and throws ApiError; loadOptions(ref) -> [{id, name}]
export function SchemaForm({ idPrefix, fields, initial = {}, edit = false, onSubmit, submitLabel, loadOptions }) {
    const start = Object.fromEntries(fields.map((f) => [f.name, toInput(f, initial[f.name])]));
    const [values, setValues] = useState(start);
    const [errors, setErrors] = useState({});
    const [formError, setFormError] = useState(null);
    const [busy, setBusy] = useState(false);
    const [options, setOptions] = useState({});
    const [treeError, setTreeError] = useState(null);   // a 422 inside a tree field: {path, reason, at}
    const formRef = useRef(null);
    const asked = useRef(new Set());

    // the lists a tree's id pickers choose from, asked for once each;
    // null when this user may not list them (ids are typed instead)
    const [lists, setLists] = useState({});
    const listOf = (ref) => {
        if (!asked.current.has(ref)) {
            asked.current.add(ref);
            loadOptions(ref).then((l) => setLists((o) => ({ ...o, [ref]: l })), () => setLists((o) => ({ ...o, [ref]: null })));
        }
        return lists[ref];
    };
    const ctx = { idPrefix, error: treeError, options: listOf };

    // a tree's 422 goes to the deepest control its path names, which gets the focus
    useEffect(() => {
        if (!treeError || treeError.at !== undefined || !formRef.current) return;
        const el = placeError(formRef.current, treeError.path);
        const at = el ? el.getAttribute('data-path') : treeError.path.split(/[.[]/)[0];
        setTreeError({ ...treeError, at });
        setTimeout(() => {
            const target = el && (el.matches('input, select, textarea, fieldset') ? el : el.querySelector('input, select, textarea'));
            if (target) target.focus();
        });
    }, [treeError]);

    // the choices of reference fields, once per set of fields
    const refs = fields.filter((x) => x.kind === 'ref' || x.kind === 'refs');
    useEffect(() => {
        for (const f of refs) {
            loadOptions(f.ref).then((list) => setOptions((o) => ({ ...o, [f.name]: list })), () => {});
        }
    }, [refs.map((f) => f.name).join()]);

    const focus = (name) => {
        const el = formRef.current && formRef.current.querySelector(`[name="${name}"]`);
        if (el) el.focus();
    };

    async function submit(e) {
        e.preventDefault();
        const body = {};
        const bad = {};
        for (const f of fields) {
            if (edit && values[f.name] === start[f.name]) continue;       // PATCH: what changed
            try {
                const v = fromInput(f, values[f.name]);
                if (v !== undefined) body[f.name] = v;
            } catch (err) {
                bad[f.name] = `not valid JSON: ${err.message}`;
            }
        }
        setErrors(bad);
        setFormError(null);
        setTreeError(null);
        if (Object.keys(bad).length) {
            focus(Object.keys(bad)[0]);
            return;
        }
        setBusy(true);
        try {
            await onSubmit(body);
        } catch (err) {
            const tree = err instanceof ApiError && err.field && fields.find((f) => f.name === err.field && f.kind === 'tree');
            if (tree) {
                setTreeError({ path: err.path, reason: err.reason });
            } else if (err instanceof ApiError && err.field && fields.some((f) => f.name === err.field)) {
                setErrors({ [err.field]: err.path === err.field ? err.reason : `${err.path}: ${err.reason}` });
                setTimeout(() => focus(err.field));
            } else {
                setFormError(err.message);
            }
        } finally {
            setBusy(false);
        }
    }

    return html`<form ref=${formRef} class="schema-form" novalidate onSubmit=${submit}>
        ${formError && html`<p class="error" role="alert">${formError}</p>`}
        ${fields.map((f) => {
            const id = `${idPrefix}-${f.name}`;
            const hint = help(f);
            const described = [hint && `${id}-help`, errors[f.name] && `${id}-error`].filter(Boolean).join(' ') || undefined;
            if (f.kind === 'tree') {
                return html`<div class="field field-tree" key=${f.name}>
                    <${Control} field=${f} id=${id} value=${values[f.name]} ctx=${ctx}
                        onInput=${(v) => setValues((old) => ({ ...old, [f.name]: v }))} />
                </div>`;
            }
            return html`<div class=${`field field-${f.kind}`} key=${f.name}>
                ${f.kind === 'refs' ? html`<span class="label" id=${`${id}-label`} aria-hidden="true">${label(f.name)}${f.required && html`<span class="req"> *</span>`}</span>`
                    : html`<label for=${id}>${label(f.name)}${f.required && html`<span class="req" aria-hidden="true"> *</span>`}</label>`}
                <${Control} field=${f} id=${id} value=${values[f.name]} options=${options[f.name]}
                    invalid=${!!errors[f.name]} described=${described}
                    onInput=${(v) => setValues((old) => ({ ...old, [f.name]: v }))} />
                ${hint && html`<small id=${`${id}-help`} class="help">${hint}</small>`}
                ${errors[f.name] && html`<p id=${`${id}-error`} class="field-error" role="alert">${errors[f.name]}</p>`}
            </div>`;
        })}
        <p class="required-note"><span aria-hidden="true">*</span> required</p>
        <button type="submit" disabled=${busy}>${busy ? 'Saving…' : submitLabel}</button>
    </form>`;
}
