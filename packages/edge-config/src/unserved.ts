// Which PostHog endpoint a path Sett has no route for is, from the list docs/compatibility.md is
// built from, so that a 404 can say "PostHog serves this, Sett does not" instead of only "Not
// found.": a client built for PostHog learns at once that the call is not a typo of its own.
import type { PosthogEndpoint } from './posthog-endpoints';

export type UnservedMatcher = (method: string, path: string) => PosthogEndpoint | undefined;

const escape = (s: string) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

function pattern(e: PosthogEndpoint): RegExp {
  const subtree = e.path.endsWith('/…');
  const base = (subtree ? e.path.slice(0, -2) : e.path).replace(/\/$/, '');
  const body = base
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : escape(part)))
    .join('');
  // With or without the trailing slash; a subtree takes everything under it too.
  return new RegExp(`^${body}${subtree ? '(?:/.*)?' : '/?'}$`, 'i');
}

/** Endpoints listed one by one win over subtrees, and deeper subtrees over shallower ones. */
export function createUnservedMatcher(endpoints: PosthogEndpoint[]): UnservedMatcher {
  const ordered = endpoints
    .map((e) => ({ e, re: pattern(e), subtree: e.path.endsWith('/…') }))
    .sort((a, b) => Number(a.subtree) - Number(b.subtree) || b.e.path.length - a.e.path.length);
  return (method, path) => {
    const clean = path.split('?')[0]!;
    if (clean.length > 2048) return undefined;
    for (const { e, re, subtree } of ordered) {
      if (!subtree && !e.methods.includes(method as PosthogEndpoint['methods'][number])) continue;
      if (re.test(clean)) return e;
    }
    return undefined;
  };
}

/** The 404 detail for a PostHog endpoint Sett does not serve. */
export function unservedDetail(method: string, e: PosthogEndpoint): string {
  return (
    `${method} ${e.path} is PostHog's "${e.summary}", which Sett does not serve. ` +
    'docs/compatibility.md lists what Sett serves.'
  );
}
