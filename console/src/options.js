// The choices of a reference field (advertiser_id, order_id, ...): the
// records of that list the user sees. An advertiser's user may not list
// advertisers; it is offered its own.
import { api, listAll } from './api.js';

export function optionsLoader(user) {
    return async (ref) => {
        if (ref === 'advertisers' && user.role === 'advertiser') {
            const own = await api('GET', `/api/advertisers/${user.advertiser_id}`);
            return [{ id: own.id, name: own.name }];
        }
        const where = { segments: '/api/custom-targeting/segments', 'targeting-keys': '/api/custom-targeting/keys' }[ref];
        const items = await listAll(where || `/api/${ref}`);
        return items.map((i) => ({
            id: i.id,
            name: ref === 'creatives' ? `${i.name} (${i.w}×${i.h})` : i.name || i.code || i.email || i.id,
        }));
    };
}
