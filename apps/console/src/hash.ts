// The console's pages are named by the URL's hash (`#/events`, `#/signup/<id>`): the path in it,
// kept current as it changes (links, the back button, a link pasted into a signed-out tab).
import { useEffect, useState } from 'react';

const current = () => window.location.hash.replace(/^#/, '');

export function useHashPath(): string {
  const [path, setPath] = useState(current);
  useEffect(() => {
    const onChange = () => setPath(current());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return path;
}
