// The resources the console lists and edits: where they live in the API,
// the columns of their lists, and their state changes. Their fields are
// not here: the forms read them from the OpenAPI document (schema.js).

export const RESOURCES = {
    advertisers: { title: 'Advertisers', one: 'advertiser', columns: ['name', 'domain', 'balance'] },
    orders: {
        title: 'Orders', one: 'order', columns: ['name', 'status', 'advertiser_id'],
        // its state changes and who may make them: the API's x-transitions
        state: 'status', batch: { pause: 'PAUSED', resume: 'APPROVED', archive: 'ARCHIVED' },
    },
    'line-items': {
        title: 'Line items', one: 'line item', columns: ['name', 'status', 'type', 'rate', 'approval'],
        state: 'status',                       // the API's x-transitions
        review: true, batch: { pause: 'PAUSED', resume: 'ACTIVE', archive: 'ARCHIVED' },
    },
    creatives: {
        title: 'Creatives', one: 'creative', columns: ['name', 'type', 'w', 'h', 'approval'],
        review: true, preview: true,
    },
    licas: {
        title: 'LICAs', one: 'LICA', columns: ['line_item_id', 'creative_id', 'weight', 'status'],
        // the API takes any change: the console's own choice of buttons
        state: 'status', transitions: { ACTIVE: ['PAUSED'], PAUSED: ['ACTIVE'] },
    },
    'ad-units': {
        title: 'Ad units', one: 'ad unit', columns: ['name', 'code', 'status'],
        state: 'status',
        transitions: { INACTIVE: ['ACTIVE', 'ARCHIVED'], ACTIVE: ['INACTIVE', 'ARCHIVED'], ARCHIVED: ['INACTIVE'] },
        // edited in forms of their own on the unit's page (ad-unit-forms.js)
        omit: ['display', 'video', 'native', 'recommendation', 'ext'],
    },
    users: { title: 'Users', one: 'user', columns: ['email', 'role', 'advertiser_id'] },
    placements: { title: 'Placements', one: 'placement', columns: ['name', 'ad_unit_ids'] },
    'ad-sources': {
        title: 'Ad sources', one: 'ad source', columns: ['name', 'endpoint_url', 'enabled'],
    },
    'targeting-keys': {
        title: 'Targeting keys', one: 'targeting key', columns: ['name', 'type', 'description'],
        api: '/api/custom-targeting/keys',
    },
};

// where a resource lives in the API: /api/{res} unless it says otherwise
export const apiPath = (res) => RESOURCES[res].api || `/api/${res}`;

// the state changes a user of this role is offered from a record's state:
// those the API publishes (machine, its x-transitions) where it restricts
// them, else the console's own list for the resource
export function transitionsFor(res, record, user, machine) {
    const now = record[res.state];
    if (machine) {
        return machine.filter((t) => (t.from === null || t.from === now) && t.to !== now
                                     && (!t.roles || t.roles.includes(user.role))).map((t) => t.to);
    }
    return (res.transitions && res.transitions[now]) || [];
}
