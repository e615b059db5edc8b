// The user's secret key at rest in this browser: IndexedDB, wrapped with
// AES-GCM under a WebCrypto key that is non-extractable (script can use it
// but never read its bytes) and is itself kept in IndexedDB (CryptoKey
// objects are structured-cloneable). The wrapped blob is bound to the user
// name and parameter id as AES-GCM additional data, so a record cannot be
// swapped to another name unnoticed.

const DB_NAME = 'blindmatch-demo';
const DB_VERSION = 1;
const META = 'meta'; // { id: 'wrapping-key', key: CryptoKey }
const USERS = 'users'; // { user, paramsId, iv, wrapped, created, enrolled }

function req(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error ?? new Error('IndexedDB request failed'));
  });
}

let dbPromise;
function db() {
  dbPromise ??= new Promise((resolve, reject) => {
    const open = indexedDB.open(DB_NAME, DB_VERSION);
    open.onupgradeneeded = () => {
      const d = open.result;
      if (!d.objectStoreNames.contains(META)) d.createObjectStore(META, { keyPath: 'id' });
      if (!d.objectStoreNames.contains(USERS)) d.createObjectStore(USERS, { keyPath: 'user' });
    };
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(new Error(`cannot open IndexedDB: ${open.error?.message ?? 'unknown error'}`));
    open.onblocked = () => reject(new Error('IndexedDB is blocked by another tab of this page'));
  });
  return dbPromise;
}

async function store(name, mode) {
  return (await db()).transaction(name, mode).objectStore(name);
}

/** The browser's wrapping key, created (non-extractable) on first use. */
async function wrappingKey() {
  const found = await req((await store(META, 'readonly')).get('wrapping-key'));
  if (found) return found.key;
  const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
  // add() fails if another tab created one meanwhile: then use that one.
  try {
    await req((await store(META, 'readwrite')).add({ id: 'wrapping-key', key }));
    return key;
  } catch {
    return (await req((await store(META, 'readonly')).get('wrapping-key'))).key;
  }
}

const aad = (user, paramsId) => new TextEncoder().encode(`blindmatch-demo/v1/${user}/${paramsId}`);

/** Wraps and stores `secret` (Uint8Array) for `user`; `info` is kept beside it. */
export async function saveSecretKey(user, paramsId, secret, info = {}) {
  if (!globalThis.crypto?.subtle) throw new Error('WebCrypto is unavailable (the page must be served over https or from localhost)');
  const key = await wrappingKey();
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const wrapped = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad(user, paramsId) }, key, secret);
  const record = { user, paramsId, iv, wrapped, created: Date.now(), ...info };
  await req((await store(USERS, 'readwrite')).put(record));
}

/** The unwrapped secret key of `user` (wipe it after use), or an Error. */
export async function loadSecretKey(user, paramsId) {
  const rec = await req((await store(USERS, 'readonly')).get(user));
  if (!rec) throw new Error(`this browser holds no key for “${user}”: register first (keys never leave the browser that made them)`);
  if (rec.paramsId !== paramsId) throw new Error(`the stored key of “${user}” is for other parameters (${rec.paramsId}); the server uses ${paramsId}`);
  const key = await wrappingKey();
  try {
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: rec.iv, additionalData: aad(user, paramsId) }, key, rec.wrapped);
    return new Uint8Array(plain);
  } catch {
    throw new Error(`the stored key of “${user}” cannot be unwrapped (corrupted, or the wrapping key changed)`);
  }
}

/** Every stored registration, without the wrapped bytes. */
export async function listUsers() {
  const all = await req((await store(USERS, 'readonly')).getAll());
  return all.map(({ user, created, enrolled }) => ({ user, created, enrolled })).sort((a, b) => a.user.localeCompare(b.user));
}

export async function deleteSecretKey(user) {
  await req((await store(USERS, 'readwrite')).delete(user));
}
