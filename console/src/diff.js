// What a change changed: two versions of a record (either may be null: a
// creation, a deletion) compared field by field, nested objects by their
// dotted paths, lists and other values whole.

const plain = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

function flatten(value, prefix, out) {
    if (plain(value) && Object.keys(value).length) {
        for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
    } else if (prefix) {
        out.set(prefix, value);
    }
    return out;
}

// [{field, before, after}] in the records' field order; a field a version
// lacks is undefined there
export function changes(before, after) {
    const a = flatten(plain(before) ? before : {}, '', new Map());
    const b = flatten(plain(after) ? after : {}, '', new Map());
    const fields = [...new Set([...a.keys(), ...b.keys()])];
    return fields
        .filter((f) => JSON.stringify(a.get(f)) !== JSON.stringify(b.get(f)))
        .map((f) => ({ field: f, before: a.get(f), after: b.get(f) }));
}
