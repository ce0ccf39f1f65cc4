// The inspector's views. Each renders into `main` from the URL's query (its state) and the JSON API.
import { add, api, errorBox, field, formQuery, h, put, select, time } from './inspector-api.js';

const viewerNames = [
  ['user', 'userId', 'User'],
  ['channel', 'channelId', 'Channel'],
  ['project', 'projectId', 'Project'],
  ['topic', 'topicId', 'Topic'],
];

/** The viewer a query string names (`?user=oz&channel=c1`). */
function viewerOf(params) {
  const viewer = {};
  for (const [short, key] of viewerNames) if (params.get(short)) viewer[key] = params.get(short);
  return viewer;
}

/** The viewer as the memory routes take it: `?userId=&channelId=...`. */
/** How many versions `GET /api/memories/{id}/history` answers when it is asked for no `limit` (`HISTORY_PAGE`). */
const HISTORY_PAGE = 100;

function viewerQuery(viewer) {
  const query = new URLSearchParams(viewer).toString();
  return query ? `?${query}` : '';
}

const round = (value) => (typeof value === 'number' ? Math.round(value * 1000) / 1000 : value);

/** A horizontal bar chart as a table: label, bar, value. */
function barChart(caption, entries, testid) {
  const max = Math.max(1, ...entries.map(([, value]) => value));
  return h(
    'table',
    { class: 'chart', 'data-testid': testid },
    h('caption', {}, caption),
    h(
      'tbody',
      {},
      entries.length === 0
        ? h('tr', {}, h('td', { class: 'muted' }, 'nothing yet'))
        : entries.map(([label, value]) =>
            h(
              'tr',
              {},
              h('th', { scope: 'row' }, label),
              h('td', { class: 'bar-cell' }, h('span', { class: 'bar', 'width%': (value / max) * 100 })),
              h('td', { class: 'num' }, String(value)),
            ),
          ),
    ),
  );
}

function badge(match) {
  return h('span', { class: `badge badge-${match}`, 'data-testid': 'badge' }, match);
}

function memoryLink(memory, viewer = {}) {
  return h('a', { href: `/memories/${memory.id}${viewerQuery(viewer)}` }, `#${memory.id}`);
}

function home(main) {
  const card = (href, title, text) => h('li', {}, h('a', { href }, title), h('p', {}, text));
  put(
    main,
    h('h1', {}, 'mneme inspector'),
    h('p', {}, 'Look at what the agent remembers, why a memory is recalled, and what maintenance did.'),
    h(
      'ul',
      { class: 'cards' },
      card(
        '/search',
        'Search',
        'A debug search: every hit with its score breakdown, match and ranks. Never reinforces.',
      ),
      card('/analytics', 'Analytics', 'Totals, the most accessed memories, additions per day, decay distributions.'),
      card('/memories', 'Memories', 'Browse by scope, owner, category; edit, pin, forget and restore.'),
      card('/conversations', 'Conversations', 'Channels, their messages, and what was extracted from each.'),
      card('/maintenance', 'Maintenance', 'Each task’s state and last report; run one now (administrator).'),
    ),
  );
}

async function search(main, params, { navigate }) {
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Debug search' },
    h(
      'p',
      { class: 'field wide' },
      h('label', { for: 'field-q' }, 'Query'),
      h('input', { id: 'field-q', name: 'q', type: 'search', value: params.get('q') ?? '', required: true }),
    ),
    viewerNames.map(([short, , label]) => field(label, { name: short, value: params.get(short) ?? '' })),
    select(
      'Mode',
      'mode',
      [
        ['', "policy's"],
        ['hybrid', 'hybrid'],
        ['recent-first', 'recent-first'],
      ],
      params.get('mode') ?? '',
    ),
    field('Top K', { name: 'topK', type: 'number', min: 1, max: 100, value: params.get('topK') ?? '' }),
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, 'Search')),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(`/search?${formQuery(form)}`);
  });
  const results = h('section', { 'aria-live': 'polite', 'aria-label': 'Results' });
  put(
    main,
    h('h1', {}, 'Debug search'),
    h('p', { class: 'muted' }, 'Searches with inspect: no access count, last access or reinforcement is written.'),
    form,
    results,
  );
  const query = params.get('q');
  if (!query) return;
  const viewer = viewerOf(params);
  const request = { query, viewer, inspect: true };
  if (params.get('topK')) request.topK = Number(params.get('topK'));
  try {
    const [found, block] = await Promise.all([
      api('POST', '/api/memories/search', {
        ...request,
        explain: true,
        ...(params.get('mode') ? { mode: params.get('mode') } : {}),
      }),
      api('POST', '/api/context', request),
    ]);
    put(
      results,
      h(
        'h2',
        {},
        `${found.hits.length} hits`,
        h('span', { class: 'muted' }, ` (${found.mode}, vector leg: ${found.vectorLeg})`),
      ),
      found.hits.length === 0 ? h('p', { class: 'empty' }, 'No memory matches this query for this viewer.') : null,
      h(
        'ol',
        { class: 'hits' },
        found.hits.map((hit) =>
          h(
            'li',
            { class: 'hit', 'data-testid': 'hit', 'data-memory-id': hit.memory.id },
            h(
              'p',
              { class: 'hit-head' },
              memoryLink(hit.memory, viewer),
              ' ',
              badge(hit.match),
              ' ',
              h('strong', { 'data-testid': 'score' }, `score ${round(hit.score)}`),
              h(
                'span',
                { class: 'muted' },
                ` fts rank ${hit.ranks.fts ?? '–'} · vector rank ${hit.ranks.vector ?? '–'} · ${hit.memory.scope} · ${hit.memory.category}`,
              ),
            ),
            h('p', { class: 'content' }, hit.memory.content),
            h(
              'dl',
              { class: 'breakdown', 'data-testid': 'breakdown' },
              Object.entries(hit.breakdown)
                .filter(([, value]) => typeof value === 'number')
                .map(([term, value]) => [
                  h('dt', {}, term),
                  h('dd', {}, h('meter', { min: 0, max: 1, value, 'aria-label': term }), ` ${round(value)}`),
                ]),
            ),
            h(
              'p',
              { class: 'muted' },
              'created ',
              time(hit.memory.createdAt),
              ' · last accessed ',
              time(hit.memory.lastAccessedAt),
              ` · accessed ${hit.memory.accessCount} times`,
            ),
            hit.explanation ? h('p', { class: 'explanation' }, hit.explanation) : null,
          ),
        ),
      ),
      h('h2', {}, 'Context block ', h('span', { class: 'muted', 'data-testid': 'words' }, `${block.words} words`)),
      block.text
        ? h('pre', { class: 'context', 'data-testid': 'context-block' }, block.text)
        : h('p', { class: 'empty' }, 'The context block would be empty.'),
    );
  } catch (error) {
    put(results, errorBox(error));
  }
}

async function analytics(main) {
  const [stats, series] = await Promise.all([api('GET', '/api/stats'), api('GET', '/api/analytics')]);
  const figure = (label, value, testid) =>
    h('div', { class: 'figure' }, h('dt', {}, label), h('dd', { 'data-testid': testid }, String(value)));
  const buckets = (values) =>
    values.map((count, index) => [`${(index / 10).toFixed(1)}–${((index + 1) / 10).toFixed(1)}`, count]);
  put(
    main,
    h('h1', {}, 'Analytics'),
    h(
      'dl',
      { class: 'figures' },
      figure('Total memories', stats.total, 'stat-total'),
      figure('Pinned', stats.pinned, 'stat-pinned'),
      figure('Added in the last 7 days', stats.addedLast7Days, 'stat-added'),
      figure('Expiring within 7 days', stats.expiring, 'stat-expiring'),
      figure('Extraction backlog (messages)', series.extractionBacklog, 'stat-backlog'),
    ),
    h('h2', {}, 'Most accessed'),
    stats.mostAccessed.length === 0
      ? h('p', { class: 'empty' }, 'No memory was recalled yet.')
      : h(
          'ol',
          { 'data-testid': 'most-accessed' },
          stats.mostAccessed.map((memory) =>
            h(
              'li',
              {},
              memoryLink(memory),
              ` ${memory.content} `,
              h('span', { class: 'muted' }, `(${memory.accessCount})`),
            ),
          ),
        ),
    h(
      'div',
      { class: 'charts' },
      barChart(
        'Memories added per day (30 days)',
        series.addedPerDay.map(({ day, count }) => [day.slice(5), count]),
        'chart-per-day',
      ),
      barChart('Active memories by scope', Object.entries(stats.byScope), 'chart-scope'),
      barChart('Active memories by category', Object.entries(stats.byCategory), 'chart-category'),
      barChart('Strength under the decay', buckets(series.distributions.strength), 'chart-strength'),
      barChart('Salience', buckets(series.distributions.salience), 'chart-salience'),
      barChart('Importance', buckets(series.distributions.importance), 'chart-importance'),
      barChart('Archived, by cause', Object.entries(series.archivedBy), 'chart-archived'),
    ),
    h('h2', {}, 'Recently faded by decay'),
    series.recentlyFaded.length === 0
      ? h('p', { class: 'empty' }, 'Decay has archived nothing.')
      : h(
          'ul',
          {},
          series.recentlyFaded.map((memory) =>
            h('li', {}, memoryLink(memory), ` ${memory.content} `, time(memory.fadedAt), ` ${memory.reason ?? ''}`),
          ),
        ),
  );
}

const scopes = ['', 'personal', 'room', 'project', 'session', 'global'];

async function memories(main, params, { navigate }) {
  const limit = Number(params.get('limit') ?? 20);
  const offset = Number(params.get('offset') ?? 0);
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filters' },
    select(
      'Scope',
      'scope',
      scopes.map((scope) => [scope, scope || 'any']),
      params.get('scope') ?? '',
    ),
    viewerNames.map(([, key, label]) => field(label, { name: key, value: params.get(key) ?? '' })),
    field('Category', { name: 'category', value: params.get('category') ?? '' }),
    select(
      'Archived',
      'archived',
      [
        ['exclude', 'active only'],
        ['include', 'active and archived'],
        ['only', 'archived only'],
      ],
      params.get('archived') ?? 'exclude',
    ),
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, 'Filter')),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(`/memories?${formQuery(form)}`);
  });
  put(main, h('h1', {}, 'Memories'), form);
  const query = new URLSearchParams(params);
  query.set('limit', String(limit));
  query.set('offset', String(offset));
  const page = await api('GET', `/api/memories?${query}`);
  const viewer = {};
  for (const key of ['channelId', 'projectId', 'topicId']) if (params.get(key)) viewer[key] = params.get(key);
  const pageLink = (to, text) => {
    const next = new URLSearchParams(params);
    next.set('offset', String(to));
    return h('a', { href: `/memories?${next}`, rel: to > offset ? 'next' : 'prev' }, text);
  };
  add(
    main,
    h(
      'p',
      { 'data-testid': 'page-info' },
      `${page.total} memories; ${offset + 1}–${offset + page.memories.length} shown`,
    ),
    page.memories.length === 0
      ? h('p', { class: 'empty' }, 'No memory matches these filters.')
      : h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { 'data-testid': 'memory-table' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Id', 'Content', 'Scope', 'Owner', 'Category', 'Importance', 'Strength', 'Created', 'State'].map(
                  (name) => h('th', { scope: 'col' }, name),
                ),
              ),
            ),
            h(
              'tbody',
              {},
              page.memories.map((memory) =>
                h(
                  'tr',
                  {},
                  h('td', {}, memoryLink(memory, viewer)),
                  h('td', { class: 'content' }, memory.content),
                  h('td', {}, memory.scope),
                  h('td', {}, memory.userId ?? memory.channelId ?? memory.projectId ?? memory.topicId ?? '–'),
                  h('td', {}, memory.category),
                  h('td', { class: 'num' }, round(memory.importance)),
                  h('td', { class: 'num' }, round(memory.strength)),
                  h('td', {}, time(memory.createdAt)),
                  h('td', {}, memory.archivedAt ? 'archived' : memory.pinned ? 'pinned' : 'active'),
                ),
              ),
            ),
          ),
        ),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      offset > 0 ? pageLink(Math.max(0, offset - limit), '← Previous') : null,
      offset + page.memories.length < page.total ? pageLink(offset + limit, 'Next →') : null,
    ),
  );
}

/** A small neighbourhood graph: the memory in the middle, its linked memories around it. */
function neighbourhood(id, links, viewer) {
  const others = links.map((link) => ({ ...link, other: link.sourceId === id ? link.targetId : link.sourceId }));
  const size = 260;
  const centre = size / 2;
  const radius = 95;
  const nodes = others.map((link, index) => {
    const angle = (2 * Math.PI * index) / Math.max(1, others.length) - Math.PI / 2;
    return { ...link, x: centre + radius * Math.cos(angle), y: centre + radius * Math.sin(angle) };
  });
  return h(
    'svg',
    {
      viewBox: `0 0 ${size} ${size}`,
      class: 'graph',
      role: 'img',
      'aria-label': `Memory ${id} and its ${links.length} links`,
    },
    nodes.map((node) => h('line', { x1: centre, y1: centre, x2: node.x, y2: node.y, class: 'edge' })),
    h('circle', { cx: centre, cy: centre, r: 18, class: 'node-self' }),
    h('text', { x: centre, y: centre + 4, 'text-anchor': 'middle' }, `#${id}`),
    nodes.map((node) =>
      h(
        'svg:a',
        { href: `/memories/${node.other}${viewerQuery(viewer)}` },
        h('circle', { cx: node.x, cy: node.y, r: 15, class: 'node' }),
        h('text', { x: node.x, y: node.y + 4, 'text-anchor': 'middle' }, `#${node.other}`),
        h('title', {}, `${node.type} (${round(node.strength)})`),
      ),
    ),
  );
}

async function memory(main, params, { id, navigate }) {
  const viewer = {};
  for (const [, key] of viewerNames) if (params.get(key)) viewer[key] = params.get(key);
  const suffix = viewerQuery(viewer);
  const base = `/api/memories/${id}`;
  const current = await api('GET', `${base}${suffix}`);
  // A page of versions: those after `historyAfter` (the last version of the page before), the first page without it.
  const historyAfter = Number(params.get('historyAfter') ?? 0);
  const historyQuery = viewerQuery(
    Number.isSafeInteger(historyAfter) && historyAfter > 0 ? { ...viewer, after: String(historyAfter) } : viewer,
  );
  const [history, links, sources] = await Promise.all([
    api('GET', `${base}/history${historyQuery}`),
    api('GET', `${base}/links${suffix}`),
    api('GET', `${base}/sources${suffix}`),
  ]);
  const status = h('div', { 'aria-live': 'polite', class: 'status' });
  const act = async (method, path, body, done) => {
    try {
      await api(method, `${base}${path}${suffix}`, body);
      await navigate(`/memories/${id}${suffix}`);
      main.querySelector('.status')?.replaceChildren(h('p', { class: 'notice' }, done));
    } catch (error) {
      put(status, errorBox(error));
    }
  };
  const edit = h(
    'form',
    { class: 'edit', 'aria-label': 'Edit memory' },
    h(
      'p',
      { class: 'field wide' },
      h('label', { for: 'field-content' }, 'Content'),
      h('textarea', { id: 'field-content', name: 'content', rows: 3 }, current.content),
    ),
    field('Category', { name: 'category', value: current.category }),
    field('Importance', { name: 'importance', type: 'number', min: 0, max: 1, step: 0.05, value: current.importance }),
    h('p', { class: 'actions' }, h('button', { type: 'submit' }, 'Save')),
  );
  edit.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(edit);
    const patch = {};
    if (data.get('content') !== current.content) patch.content = data.get('content');
    if (data.get('category') !== current.category) patch.category = data.get('category');
    if (Number(data.get('importance')) !== current.importance) patch.importance = Number(data.get('importance'));
    act('PATCH', '', patch, 'Saved: a new version is in the history.');
  });
  const button = (text, onclick) => h('button', { type: 'button', onclick }, text);
  const shown = [
    'scope',
    'userId',
    'channelId',
    'projectId',
    'topicId',
    'category',
    'sector',
    'source',
    'importance',
    'strength',
    'salience',
    'accessCount',
    'lastAccessedAt',
    'pinned',
    'validFrom',
    'supersededBy',
    'archivedAt',
    'fadedAt',
    'createdAt',
    'updatedAt',
    'embeddingModel',
    'sourceMessageIds',
    'sourceIds',
  ];
  put(
    main,
    h('h1', {}, `Memory #${id}`, current.archivedAt ? h('span', { class: 'badge badge-archived' }, 'archived') : null),
    h('blockquote', { class: 'content', 'data-testid': 'memory-content' }, current.content),
    status,
    h(
      'p',
      { class: 'actions' },
      button(current.pinned ? 'Unpin' : 'Pin', () =>
        act('PATCH', '', { pinned: !current.pinned }, current.pinned ? 'Unpinned.' : 'Pinned.'),
      ),
      ' ',
      current.archivedAt
        ? button('Restore', () => act('POST', '/restore', undefined, 'Restored.'))
        : button('Forget', () => act('DELETE', '', undefined, 'Forgotten: archived, restorable.')),
    ),
    edit,
    h('h2', {}, 'Fields'),
    h(
      'dl',
      { class: 'fields', 'data-testid': 'fields' },
      shown.map((key) => [
        h('dt', {}, key),
        h(
          'dd',
          {},
          /At$|From$/.test(key)
            ? time(current[key])
            : Array.isArray(current[key])
              ? current[key].join(', ') || '–'
              : String(round(current[key]) ?? '–'),
        ),
      ]),
    ),
    h('h2', {}, 'History'),
    h(
      'ol',
      { class: 'history', 'data-testid': 'history' },
      history.map((version) =>
        h(
          'li',
          { 'data-testid': 'version' },
          h('strong', {}, `v${version.version} ${version.action}`),
          ' by ',
          version.actor ?? 'unknown',
          ' at ',
          time(version.createdAt),
          version.reason ? ` (${version.reason})` : '',
          h(
            'ul',
            {},
            Object.entries(version.changes).map(([name, change]) =>
              h('li', {}, `${name}: `, h('del', {}, String(change.from)), ' → ', h('ins', {}, String(change.to))),
            ),
          ),
        ),
      ),
    ),
    // The API answers a page of versions (100 unless asked); a full page may have more after it, a link away.
    history.length === HISTORY_PAGE
      ? h(
          'a',
          {
            href: `/memories/${id}${viewerQuery({ ...viewer, historyAfter: String(history.at(-1).version) })}`,
            rel: 'next',
            'data-testid': 'history-more',
          },
          'Later versions →',
        )
      : '',
    h('h2', {}, 'Links'),
    links.length === 0
      ? h('p', { class: 'empty' }, 'No links.')
      : h(
          'div',
          { class: 'links' },
          neighbourhood(id, links, viewer),
          h(
            'ul',
            { 'data-testid': 'links' },
            links.map((link) => {
              const outgoing = link.sourceId === id;
              const other = outgoing ? link.targetId : link.sourceId;
              return h(
                'li',
                {},
                outgoing ? `→ ${link.type} ` : `← ${link.type} from `,
                memoryLink({ id: other }, viewer),
                ` (${round(link.strength)})`,
              );
            }),
          ),
        ),
    h('h2', {}, 'Came from'),
    sources.length === 0
      ? h('p', { class: 'empty' }, 'No message (a manual memory, or its messages are not readable with this key).')
      : h(
          'ul',
          { class: 'messages', 'data-testid': 'sources' },
          sources.map((message) =>
            h(
              'li',
              {},
              h(
                'a',
                {
                  href: `/conversations?channel=${encodeURIComponent(message.channelId)}&after=${Math.max(0, message.id - 1)}`,
                },
                `${message.channelId} #${message.id}`,
              ),
              ` ${message.senderId} (${message.role}): ${message.content}`,
            ),
          ),
        ),
  );
}

async function conversations(main, params) {
  const channels = await api('GET', '/api/channels');
  const selected = params.get('channel');
  put(
    main,
    h('h1', {}, 'Conversations'),
    channels.length === 0
      ? h('p', { class: 'empty' }, 'No channel has messages yet.')
      : h(
          'nav',
          { 'aria-label': 'Channels', class: 'channels' },
          h(
            'ul',
            {},
            channels.map((channel) =>
              h(
                'li',
                {},
                h(
                  'a',
                  {
                    href: `/conversations?channel=${encodeURIComponent(channel.id)}`,
                    'aria-current': channel.id === selected ? 'page' : null,
                  },
                  channel.id,
                ),
                h(
                  'span',
                  { class: 'muted' },
                  ` ${channel.visibility}, extracted through #${channel.extractedThrough} of #${channel.latestMessageId}`,
                ),
              ),
            ),
          ),
        ),
  );
  if (!selected) return;
  const after = Number(params.get('after') ?? 0);
  const page = await api('GET', `/api/channels/${encodeURIComponent(selected)}/messages?after=${after}&limit=50`);
  add(
    main,
    h('h2', {}, `Channel ${selected}`),
    page.messages.length === 0
      ? h('p', { class: 'empty' }, 'No messages here.')
      : h(
          'ol',
          { class: 'messages', 'data-testid': 'messages' },
          page.messages.map((message) =>
            h(
              'li',
              { class: `message role-${message.role}`, 'data-testid': 'message' },
              h(
                'p',
                { class: 'muted' },
                `#${message.id} ${message.senderId} (${message.role}) `,
                time(message.createdAt),
                message.topicId ? ` topic ${message.topicId}` : '',
              ),
              h('p', {}, message.content),
              message.memories.length === 0
                ? null
                : h(
                    'ul',
                    { class: 'extracted', 'aria-label': 'Extracted memories' },
                    message.memories.map((memory) =>
                      h(
                        'li',
                        {},
                        '↳ ',
                        memoryLink(memory, { channelId: selected }),
                        ` ${memory.scope} ${memory.category}: ${memory.content}`,
                      ),
                    ),
                  ),
            ),
          ),
        ),
    page.nextAfterId === null
      ? null
      : h(
          'a',
          { href: `/conversations?channel=${encodeURIComponent(selected)}&after=${page.nextAfterId}`, rel: 'next' },
          'Later messages →',
        ),
  );
}

async function maintenance(main, _params, { navigate }) {
  const status = await api('GET', '/api/maintenance');
  const output = h('section', { 'aria-live': 'polite', 'aria-label': 'Last run' });
  const run = async (task) => {
    put(output, h('p', {}, `Running ${task}...`));
    try {
      const report = await api('POST', '/api/maintenance/run', { tasks: task });
      await navigate('/maintenance');
      main
        .querySelector('[aria-label="Last run"]')
        ?.replaceChildren(
          h('h2', {}, `Ran ${task}`),
          h('pre', { 'data-testid': 'run-report' }, JSON.stringify(report, null, 2)),
        );
    } catch (error) {
      put(output, errorBox(error));
    }
  };
  put(
    main,
    h('h1', {}, 'Maintenance'),
    output,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { 'data-testid': 'tasks' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Task', 'In policy', 'Watermark', 'Last run', 'Last report', ''].map((name) =>
              h('th', { scope: 'col' }, name),
            ),
          ),
        ),
        h(
          'tbody',
          {},
          status.tasks.map((task) =>
            h(
              'tr',
              {},
              h('th', { scope: 'row' }, task.task),
              h('td', {}, task.enabled ? 'yes' : 'no'),
              h(
                'td',
                {},
                task.states.map((state) => `${state.channelId || 'all'}: ${state.watermark ?? '–'}`).join(', ') || '–',
              ),
              h('td', {}, time(Math.max(0, ...task.states.map((state) => state.lastRunAt ?? 0)) || null)),
              h(
                'td',
                {},
                task.lastReport
                  ? h('pre', {}, JSON.stringify(task.lastReport))
                  : h('span', { class: 'muted' }, 'none since start'),
              ),
              h('td', {}, h('button', { type: 'button', onclick: () => run(task.task) }, `Run ${task.task} now`)),
            ),
          ),
        ),
      ),
    ),
    h('h2', {}, 'Extraction'),
    status.extraction.length === 0
      ? h('p', { class: 'empty' }, 'No channel has messages yet.')
      : h(
          'table',
          { 'data-testid': 'extraction' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Channel', 'Watermark', 'Backlog', 'Last run'].map((name) => h('th', { scope: 'col' }, name)),
            ),
          ),
          h(
            'tbody',
            {},
            status.extraction.map((row) =>
              h(
                'tr',
                {},
                h('th', { scope: 'row' }, row.channelId),
                h('td', { class: 'num' }, row.watermark),
                h('td', { class: 'num' }, row.backlog),
                h('td', {}, time(row.lastRunAt)),
              ),
            ),
          ),
        ),
  );
}

export const views = { home, search, analytics, memories, memory, conversations, maintenance };
