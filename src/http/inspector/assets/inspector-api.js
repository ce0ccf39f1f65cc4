// The inspector's helpers: the JSON API with the tab's key, DOM building, error and key states.

const KEY = 'mneme.apiKey';

/** A failed API call: the problem+json document's title and detail. */
export class ApiError extends Error {
  constructor(status, title, detail) {
    super(`${title}: ${detail}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

export const apiKey = {
  get: () => sessionStorage.getItem(KEY),
  set: (key) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};

/** Calls the API of this origin with the tab's key; throws ApiError with the problem's title and detail. */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  const key = apiKey.get();
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  } catch (error) {
    throw new ApiError(0, 'Network error', `the service did not answer (${error.message})`);
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    throw new ApiError(
      response.status,
      parsed?.title ?? `HTTP ${response.status}`,
      parsed?.detail ?? (text.slice(0, 300) || response.statusText),
    );
  }
  return parsed;
}

/** Builds an element: `h('a', { href: '/x', class: 'y' }, 'text', child)`. Text is always text, never HTML. */
export function h(tag, attributes = {}, ...children) {
  const svg = ['svg', 'circle', 'line', 'text', 'g', 'title'].includes(tag) || tag.startsWith('svg:');
  const name = tag.replace(/^svg:/, '');
  const element = svg ? document.createElementNS('http://www.w3.org/2000/svg', name) : document.createElement(name);
  for (const [attribute, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (attribute.startsWith('on') && typeof value === 'function') element.addEventListener(attribute.slice(2), value);
    else if (attribute === 'width%') element.style.width = `${value}%`;
    else element.setAttribute(attribute, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** A `<time>` element for an ISO string or epoch milliseconds; a dash when null. */
export function time(value) {
  if (value === null || value === undefined) return h('span', { class: 'muted' }, 'never');
  const iso = typeof value === 'number' ? new Date(value).toISOString() : value;
  return h('time', { datetime: iso }, iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'));
}

/** The error state: the problem's title and detail, announced to screen readers. */
export function errorBox(error) {
  const title = error instanceof ApiError ? error.title : 'Error';
  const detail = error instanceof ApiError ? error.detail : String(error?.message ?? error);
  return h(
    'div',
    { class: 'error', role: 'alert', 'data-testid': 'error' },
    h('strong', { class: 'error-title' }, title),
    h('p', { class: 'error-detail' }, detail),
  );
}

/** A labelled input: `field('Query', { name: 'q', value })`. */
export function field(label, attributes) {
  const id = `field-${attributes.name}`;
  return h('p', { class: 'field' }, h('label', { for: id }, label), h('input', { id, ...attributes }));
}

/** A labelled select of `[value, text]` options. */
export function select(label, name, options, value) {
  const id = `field-${name}`;
  return h(
    'p',
    { class: 'field' },
    h('label', { for: id }, label),
    h(
      'select',
      { id, name },
      options.map(([optionValue, text]) => h('option', { value: optionValue, selected: optionValue === value }, text)),
    ),
  );
}

/** The non-empty fields of a form as a query string. */
export function formQuery(form) {
  const query = new URLSearchParams();
  for (const [name, value] of new FormData(form))
    if (String(value).trim() !== '') query.set(name, String(value).trim());
  return query;
}

/** Replaces a container's children, leaving out null, undefined and false. */
export function put(container, ...children) {
  container.replaceChildren(
    ...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false),
  );
}

/** Appends to a container, leaving out null, undefined and false. */
export function add(container, ...children) {
  container.append(
    ...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false),
  );
}
