// The resources the console lists and edits: where they live in the API,
// the columns of their lists, and their state changes. Their fields are
// not here: the forms read them from the OpenAPI document (schema.js).

export const RESOURCES = {
    advertisers: { title: 'Advertisers', one: 'advertiser', columns: ['name', 'domain', 'balance'] },
    orders: {
        title: 'Orders', one: 'order', columns: ['name', 'status', 'advertiser_id'],
        state: 'status',
        // DRAFT (new) -> APPROVED <-> PAUSED, any -> ARCHIVED; approving (and
        // resuming) is for admins and operators (README "Demand")
        transitions: { DRAFT: ['APPROVED', 'ARCHIVED'], APPROVED: ['PAUSED', 'ARCHIVED'], PAUSED: ['APPROVED', 'ARCHIVED'] },
        staffOnly: ['APPROVED'],
    },
    'line-items': {
        title: 'Line items', one: 'line item', columns: ['name', 'status', 'type', 'rate', 'approval'],
        state: 'status',
        // DRAFT -> ACTIVE <-> PAUSED, ACTIVE or PAUSED -> COMPLETED, any -> ARCHIVED
        transitions: {
            DRAFT: ['ACTIVE', 'ARCHIVED'], ACTIVE: ['PAUSED', 'COMPLETED', 'ARCHIVED'],
            PAUSED: ['ACTIVE', 'COMPLETED', 'ARCHIVED'], COMPLETED: ['ARCHIVED'],
        },
        review: true,
    },
    creatives: {
        title: 'Creatives', one: 'creative', columns: ['name', 'type', 'w', 'h', 'approval'],
        review: true, preview: true,
    },
    licas: {
        title: 'LICAs', one: 'LICA', columns: ['line_item_id', 'creative_id', 'weight', 'status'],
        state: 'status', transitions: { ACTIVE: ['PAUSED'], PAUSED: ['ACTIVE'] },
    },
    'ad-units': {
        title: 'Ad units', one: 'ad unit', columns: ['name', 'code', 'status'],
        state: 'status',
        transitions: { INACTIVE: ['ACTIVE', 'ARCHIVED'], ACTIVE: ['INACTIVE', 'ARCHIVED'], ARCHIVED: ['INACTIVE'] },
    },
    users: { title: 'Users', one: 'user', columns: ['email', 'role', 'advertiser_id'] },
    placements: { title: 'Placements', one: 'placement', columns: ['name', 'ad_unit_ids'] },
    'targeting-keys': {
        title: 'Targeting keys', one: 'targeting key', columns: ['name', 'type', 'description'],
        api: '/api/custom-targeting/keys',
    },
};

// where a resource lives in the API: /api/{res} unless it says otherwise
export const apiPath = (res) => RESOURCES[res].api || `/api/${res}`;

// the state changes a user of this role is offered from a record's state
export function transitionsFor(res, record, user) {
    const next = (res.transitions && res.transitions[record[res.state]]) || [];
    return user.role === 'advertiser' ? next.filter((s) => !(res.staffOnly || []).includes(s)) : next;
}
