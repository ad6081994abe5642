// Signing in as PostHog's login does: email and password, then the 2FA code when the account
// has it on. Errors are the API's own words (a wrong password, a lockout with its wait).
import { useState, type FormEvent } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, ApiError } from './api';
import { ErrorNote } from './ui';

export function Login() {
  const client = useQueryClient();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [needsCode, setNeedsCode] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      if (needsCode) await api('POST', '/api/login/token/', { token: code });
      else await api('POST', '/api/login/', { email, password });
      await client.invalidateQueries({ queryKey: ['me'] });
    } catch (err) {
      if (err instanceof ApiError && err.code === '2fa_required') setNeedsCode(true);
      else setError(err as Error);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="centered">
      <form className="card login" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Sign in to Sett</h1>
        {needsCode ? (
          <label>
            Two-factor code
            <input
              name="token"
              inputMode="numeric"
              autoComplete="one-time-code"
              autoFocus
              required
              value={code}
              onChange={(e) => setCode(e.target.value)}
              placeholder="123456 or a backup code"
            />
          </label>
        ) : (
          <>
            <label>
              Email
              <input
                name="email"
                type="email"
                autoComplete="username"
                autoFocus
                required
                value={email}
                onChange={(e) => setEmail(e.target.value)}
              />
            </label>
            <label>
              Password
              <input
                name="password"
                type="password"
                autoComplete="current-password"
                required
                value={password}
                onChange={(e) => setPassword(e.target.value)}
              />
            </label>
          </>
        )}
        {error && <ErrorNote error={error} />}
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Signing in…' : needsCode ? 'Verify' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
