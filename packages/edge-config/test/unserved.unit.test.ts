// The 404 detail's lookup: a path Sett has no route for is named as the PostHog endpoint it is,
// by method for endpoints listed one by one, anywhere under a subtree, with or without the
// trailing slash; paths PostHog has not are not named.
import { POSTHOG_ENDPOINTS, createUnservedMatcher, unservedDetail, type PosthogEndpoint } from '../src';

const list: PosthogEndpoint[] = [
  {
    methods: ['GET'],
    path: '/api/projects/{project_id}/events/{id}/',
    area: 'management',
    summary: 'An event',
  },
  {
    methods: ['GET', 'POST'],
    path: '/api/projects/{project_id}/insights/',
    area: 'management',
    summary: 'Insights',
  },
  {
    methods: ['GET'],
    path: '/api/projects/{project_id}/insights/my_last_viewed/',
    area: 'management',
    summary: 'Last viewed',
  },
  {
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    path: '/api/projects/{project_id}/insights/…',
    area: 'management',
    summary: 'Anything about insights',
  },
  {
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    path: '/api/projects/{project_id}/experiments/…',
    area: 'management',
    summary: 'Experiments',
  },
];
const match = createUnservedMatcher(list);

it('names an endpoint listed one by one, for its methods, with or without the slash', () => {
  expect(match('GET', '/api/projects/1/events/0190-abc/')?.summary).toBe('An event');
  expect(match('GET', '/api/projects/1/events/0190-abc')?.summary).toBe('An event');
  expect(match('GET', '/api/projects/1/events/0190-abc/?x=1')?.summary).toBe('An event');
  expect(match('POST', '/api/projects/1/events/0190-abc/')).toBeUndefined();
  expect(match('GET', '/api/projects/1/events/a/b/')).toBeUndefined();
});

it('prefers an endpoint listed one by one over a subtree that holds it', () => {
  expect(match('GET', '/api/projects/7/insights/my_last_viewed/')?.summary).toBe('Last viewed');
  expect(match('GET', '/api/projects/7/insights/trend/?events=x')?.summary).toBe('Anything about insights');
});

it('names anything under a subtree, and nothing else', () => {
  expect(match('DELETE', '/api/projects/7/experiments/3/')?.summary).toBe('Experiments');
  expect(match('GET', '/api/projects/7/experiments')?.summary).toBe('Experiments');
  expect(match('GET', '/api/projects/7/experimentsX/')).toBeUndefined();
  expect(match('GET', '/api/projects/7/nonsense/')).toBeUndefined();
  expect(match('GET', '/totally/unknown')).toBeUndefined();
});

it('says what it is and where the list is', () => {
  const e = match('GET', '/api/projects/7/experiments/')!;
  expect(unservedDetail('GET', e)).toBe(
    'GET /api/projects/{project_id}/experiments/… is PostHog\'s "Experiments", which Sett does not serve. ' +
      'docs/compatibility.md lists what Sett serves.',
  );
});

it('matches the real list, and leaves over-long paths alone', () => {
  const real = createUnservedMatcher(POSTHOG_ENDPOINTS);
  expect(real('GET', '/api/projects/1/session_recordings/abc/snapshots/')?.path).toMatch(
    /session_recordings/,
  );
  expect(real('GET', `/api/projects/1/${'a/'.repeat(5000)}`)).toBeUndefined();
});
