// Who is signed in: the user of /api/auth/me (role, advertiser_id), for the
// menus and pages to hide what the role cannot do. The API stays the guard.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export const Session = createContext(null);
export const useSession = () => useContext(Session);

// what each role may open; the API refuses the rest whatever the console shows
const AREAS = {
    admin: ['dashboard', 'advertisers', 'orders', 'line-items', 'creatives', 'licas', 'approvals',
            'ad-units', 'placements', 'targeting-keys', 'ad-sources', 'explain', 'users', 'audit', 'settings'],
    operator: ['dashboard', 'advertisers', 'orders', 'line-items', 'creatives', 'licas', 'approvals',
               'ad-units', 'placements', 'targeting-keys', 'ad-sources', 'explain', 'settings'],
    advertiser: ['dashboard', 'orders', 'line-items', 'creatives', 'licas', 'settings'],
};

export const may = (user, area) => !!user && (AREAS[user.role] || []).includes(area);
