// The management API, as the console calls it: the bearer token added, a
// 401 answered by one silent refresh and a retry, errors as ApiError with
// the field a 422 names. Tokens live in memory; the refresh token also in
// sessionStorage, so a reload of the tab stays signed in and closing the
// tab forgets it. Nothing here logs a token.

const REFRESH_KEY = 'adserve.console.refresh';
let access = null;
let refreshTimer = null;
let refreshing = null;            // the one refresh in flight: tokens are single-use
const listeners = new Set();

export class ApiError extends Error {
    constructor(status, detail) {
        super(typeof detail === 'string' ? detail : JSON.stringify(detail));
        this.status = status;
        this.detail = detail;
        // "targeting.kv.data[1].data.rhs: ..." -> the field "targeting",
        // the path "targeting.kv.data[1].data.rhs", the message after it
        const m = status === 422 && typeof detail === 'string' && detail.match(/^([A-Za-z_][\w.[\]]*): (.*)$/s);
        this.path = m ? m[1] : null;
        this.field = m ? m[1].split(/[.[]/)[0] : null;
        this.reason = m ? m[2] : this.message;
    }
}

// signed-in state changes: fn(true | false)
export function onSession(fn) {
    listeners.add(fn);
    return () => listeners.delete(fn);
}

function setTokens(pair) {
    access = pair ? pair.access_token : null;
    clearTimeout(refreshTimer);
    if (pair) {
        sessionStorage.setItem(REFRESH_KEY, pair.refresh_token);
        // a minute before the access token expires, or half its life if short
        const ttl = Number(pair.expires_in) || 900;
        const lead = Math.max(ttl - 60, ttl / 2);
        refreshTimer = setTimeout(() => refresh().catch(() => {}), lead * 1000);
    } else {
        sessionStorage.removeItem(REFRESH_KEY);
    }
    listeners.forEach((fn) => fn(!!pair));
}

async function send(method, path, body, bearer) {
    const headers = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    const res = await fetch(path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'omit', cache: 'no-store',
    });
    const text = await res.text();
    let data = null;
    try {
        data = text ? JSON.parse(text) : null;
    } catch {
        data = { detail: text };
    }
    if (!res.ok) throw new ApiError(res.status, data && data.detail !== undefined ? data.detail : res.statusText);
    return data;
}

// a call that needs no session (forgot and reset password)
export const anonymous = (path, body) => send('POST', path, body);

export async function login(email, password) {
    setTokens(await send('POST', '/api/auth/login', { email, password }));
}

// a new pair from the stored refresh token; false when there is none or
// it is refused (then signed out)
export function refresh() {
    if (!refreshing) {
        const token = sessionStorage.getItem(REFRESH_KEY);
        refreshing = (token ? send('POST', '/api/auth/refresh', { refresh_token: token }) : Promise.reject(null))
            .then((pair) => { setTokens(pair); return true; },
                  () => { setTokens(null); return false; })
            .finally(() => { refreshing = null; });
    }
    return refreshing;
}

// ends the login server-side (POST /api/auth/logout revokes the refresh
// token and every one rotated from it), then forgets both tokens; signed
// out here even if the server cannot be reached
export async function signOut() {
    const token = sessionStorage.getItem(REFRESH_KEY);
    setTokens(null);
    if (token) await send('POST', '/api/auth/logout', { refresh_token: token }).catch(() => {});
}

export function hasSession() {
    return access !== null || sessionStorage.getItem(REFRESH_KEY) !== null;
}

export async function api(method, path, body) {
    if (access === null && !(await refresh())) throw new ApiError(401, 'signed out');
    try {
        return await send(method, path, body, access);
    } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 401) throw e;
        if (!(await refresh())) throw e;
        return send(method, path, body, access);
    }
}

// every item of a list, page by page (500 a page, the API's largest)
export async function listAll(path, max = 5000) {
    const items = [];
    const sep = path.includes('?') ? '&' : '?';
    for (let offset = 0; offset < max; offset += 500) {
        const page = await api('GET', `${path}${sep}limit=500&offset=${offset}`);
        items.push(...page.items);
        if (items.length >= page.total || page.items.length === 0) break;
    }
    return items;
}
