// The inspector's entry: picks the view the path names, keeps the URL as the view's state, asks for a key on 401.
import { ApiError, apiKey, errorBox, h } from './inspector-api.js';
import { views } from './inspector-views.js';

const main = document.getElementById('view');
const forgetKey = document.getElementById('forget-key');

/** Shows another view (or the same with other state) and records it in the history. */
export function navigate(url) {
  history.pushState(null, '', url);
  return render();
}

function keyForm(problem) {
  const input = h('input', { id: 'api-key', name: 'key', type: 'password', autocomplete: 'off', required: true });
  const form = h(
    'form',
    { class: 'key-form', 'aria-labelledby': 'key-heading' },
    h('h1', { id: 'key-heading' }, 'API key'),
    h(
      'p',
      {},
      'This service needs an API key. It is kept for this tab only (session storage) and sent with each call.',
    ),
    errorBox(problem),
    h('p', { class: 'field' }, h('label', { for: 'api-key' }, 'API key'), input),
    h('button', { type: 'submit' }, 'Use this key'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    apiKey.set(input.value.trim());
    render();
  });
  main.replaceChildren(form);
  input.focus();
}

/** Renders the view of the current URL. */
export async function render() {
  const { pathname, search } = location;
  const params = new URLSearchParams(search);
  forgetKey.hidden = apiKey.get() === null;
  for (const link of document.querySelectorAll('nav a')) {
    const current = pathname === link.getAttribute('href') || pathname.startsWith(`${link.getAttribute('href')}/`);
    if (current) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const memory = /^\/memories\/(\d+)$/.exec(pathname);
  const view = memory ? views.memory : (views[pathname.slice(1) || 'home'] ?? views.home);
  const name = memory ? 'memory' : pathname.slice(1) || 'home';
  document.title = `mneme inspector: ${name}`;
  main.dataset.view = name;
  main.removeAttribute('aria-busy');
  try {
    main.setAttribute('aria-busy', 'true');
    await view(main, params, { navigate, id: memory ? Number(memory[1]) : undefined });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) keyForm(error);
    else main.replaceChildren(h('h1', {}, 'Could not load this view'), errorBox(error));
  } finally {
    main.setAttribute('aria-busy', 'false');
  }
}

document.addEventListener('click', (event) => {
  const link = event.target instanceof Element ? event.target.closest('a[href]') : null;
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  const url = new URL(link.getAttribute('href'), location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/') || url.pathname.endsWith('.json')) return;
  event.preventDefault();
  navigate(url.pathname + url.search).then(() => main.focus());
});
window.addEventListener('popstate', () => render());
forgetKey.addEventListener('click', () => {
  apiKey.clear();
  render();
});
render();
