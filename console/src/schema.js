import { kindOf } from './tree.js';

// The forms' fields, read from /api/openapi.json: the document the sidecar
// generates from the same tables that validate input. A field's kind, enum,
// bounds, default, description and whether it is required come from there;
// nothing here lists a resource's fields.

let doc = null;

export function openapi() {
    doc ??= fetch('/api/openapi.json', { cache: 'no-cache' }).then((r) => {
        if (!r.ok) throw new Error(`openapi.json: ${r.status}`);
        return r.json();
    });
    return doc;
}

// a schema with its $ref followed; the referring member's own keywords
// (default, description) kept over the target's
function deref(d, s) {
    let out = s || {};
    while (out.$ref) {
        const { $ref, ...own } = out;
        out = { ...d.components.schemas[$ref.split('/').pop()], ...own };
    }
    return out;
}

// which list a reference field picks from
const REFS = {
    advertiser_id: 'advertisers', order_id: 'orders', line_item_id: 'line-items',
    creative_id: 'creatives', parent_id: 'ad-units', ad_unit_id: 'ad-units',
};
// lists of references, picked as checkboxes
const REF_LISTS = { ad_unit_ids: 'ad-units' };

const types = (s) => (Array.isArray(s.type) ? s.type : [s.type]);

function describe(d, name, prop, required) {
    const s = deref(d, prop);
    const variants = (s.oneOf || s.anyOf || []).map((v) => deref(d, v));
    const t = types(s);
    const nullable = t.includes('null') || variants.some((v) => types(v).includes('null'));
    const field = {
        name, required, nullable, description: s.description || '', default: s.default,
        min: s.minimum, max: s.maximum, maxLength: s.maxLength, format: s.format,
        secret: !!s.writeOnly,
    };
    const items = s.items ? deref(d, s.items) : null;
    if (s.enum) {
        field.kind = 'enum';
        field.options = s.enum.filter((v) => v !== null);
    } else if (REFS[name] && s.format === 'uuid') {
        field.kind = 'ref';
        field.ref = REFS[name];
    } else if (t.includes('boolean')) {
        field.kind = 'bool';
    } else if (t.includes('integer') || t.includes('number')) {
        field.kind = 'number';
        field.step = t.includes('integer') ? 1 : 'any';
    } else if (t.includes('string') && s.format === 'date-time') {
        field.kind = 'datetime';
    } else if (t.includes('string')) {
        field.kind = s.maxLength > 1024 ? 'textarea' : 'text';
    } else if (REF_LISTS[name] && t.includes('array')) {
        field.kind = 'refs';
        field.ref = REF_LISTS[name];
    } else if (t.includes('array') && items && types(items).includes('string') && !items.enum) {
        field.kind = 'list';
    } else if (['object', 'union', 'array', 'multi', 'refs'].includes(kindOf(d, prop, name))) {
        field.kind = 'tree';                   // objects, arrays of objects, unions: tree.js
        field.schema = prop;
        field.doc = d;
    } else {
        field.kind = 'json';                   // any JSON
    }
    return field;
}

// the fields a request body of METHOD PATH takes: required first, then
// the others in the document's order; read-only ones left out
export function fieldsOf(d, path, method) {
    const op = d.paths[path] && d.paths[path][method];
    const body = op && op.requestBody && op.requestBody.content['application/json'];
    if (!body) throw new Error(`the API has no ${method.toUpperCase()} ${path} with a JSON body`);
    const schema = deref(d, body.schema);
    const required = new Set(schema.required || []);
    const fields = Object.entries(schema.properties || {})
        .filter(([, p]) => !deref(d, p).readOnly)
        .map(([name, p]) => describe(d, name, p, required.has(name)));
    return [...fields.filter((f) => f.required), ...fields.filter((f) => !f.required)];
}

// The state changes the server takes for the record that GET PATH answers:
// its schema's x-transitions ({from (null: any), to, roles}), or null when
// the server restricts none.
export function transitionsOf(d, path) {
    const op = d.paths[path] && d.paths[path].get;
    const body = op && op.responses['200'] && op.responses['200'].content['application/json'];
    const schema = body ? deref(d, body.schema) : {};
    return schema['x-transitions'] || null;
}

// a field's value as the form holds it (a string, or a boolean)
export function toInput(field, value) {
    if (field.kind === 'bool') return value === undefined ? field.default === true : !!value;
    if (field.kind === 'refs') return Array.isArray(value) ? value : [];
    if (field.kind === 'tree') return value === null ? undefined : value;
    if (value === undefined || value === null) return '';
    switch (field.kind) {
    case 'list': return value.join('\n');
    case 'json': return JSON.stringify(value, null, 2);
    case 'datetime': {
        // the browser's local time, as <input type=datetime-local> shows it
        const t = new Date(value);
        return new Date(t.getTime() - t.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
    }
    default: return String(value);
    }
}

// the form's string back to JSON; undefined leaves the field out (the
// API's default applies). Throws on JSON that does not parse.
export function fromInput(field, input) {
    if (field.kind === 'bool' || field.kind === 'refs' || field.kind === 'tree') return input;
    if (input === '') return field.nullable && field.kind !== 'enum' ? null : undefined;
    switch (field.kind) {
    case 'number': return Number(input);
    case 'enum': return field.options.find((o) => String(o) === input);
    case 'list': return input.split('\n').map((s) => s.trim()).filter(Boolean);
    case 'json': return JSON.parse(input);
    case 'datetime': return new Date(input).toISOString().replace(/\.\d{3}Z$/, 'Z');
    default: return input;
    }
}

// "advertiser_id" -> "Advertiser", "landing_url" -> "Landing URL"
export function label(name) {
    const words = name.replace(/_id$/, '').replace(/_ids$/, 's').split('_').map((w) => ({ url: 'URL', html: 'HTML', w: 'Width', h: 'Height', kv: 'Key-values', lhs: 'Key (lhs)', op: 'Operator', rhs: 'Value (rhs)', yob: 'Year of birth' }[w] || w));
    const text = words.join(' ');
    return text.charAt(0).toUpperCase() + text.slice(1);
}
