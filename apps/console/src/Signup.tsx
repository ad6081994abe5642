// Accepting an invite link (`#/signup/<id>`): what it is for, then a password of the person's
// choosing; the account is created and signed in at once.
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from './api';
import { ErrorNote, Skeleton } from './ui';

export function Signup({ inviteId }: { inviteId: string }) {
  const client = useQueryClient();
  const [firstName, setFirstName] = useState('');
  const [password, setPassword] = useState('');
  const invite = useQuery({
    queryKey: ['invite', inviteId],
    queryFn: () =>
      api<{ target_email: string; first_name: string; organization_name: string }>(
        'GET',
        `/api/signup/${encodeURIComponent(inviteId)}/`,
      ),
  });
  const accept = useMutation({
    mutationFn: () =>
      api('POST', `/api/signup/${encodeURIComponent(inviteId)}/`, {
        password,
        ...(firstName.trim() ? { first_name: firstName.trim() } : {}),
      }),
    onSuccess: async () => {
      window.location.hash = '#/events';
      await client.invalidateQueries({ queryKey: ['me'] });
    },
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    accept.mutate();
  }
  return (
    <main className="centered">
      <form className="card login" onSubmit={submit} aria-labelledby="signup-title">
        <h1 id="signup-title">Join Sett</h1>
        {invite.isPending ? (
          <Skeleton lines={2} />
        ) : invite.error ? (
          <ErrorNote error={invite.error} />
        ) : (
          <>
            <p>
              You are invited to <strong>{invite.data.organization_name}</strong> as{' '}
              {invite.data.target_email}.
            </p>
            <label>
              First name
              <input
                autoComplete="given-name"
                value={firstName}
                placeholder={invite.data.first_name}
                onChange={(e) => setFirstName(e.target.value)}
              />
            </label>
            <label>
              Choose a password (8 characters or more)
              <input
                type="password"
                autoComplete="new-password"
                required
                minLength={8}
                maxLength={128}
                value={password}
                onChange={(e) => setPassword(e.target.value)}
              />
            </label>
            {accept.error && <ErrorNote error={accept.error} />}
            <button type="submit" className="primary" disabled={accept.isPending}>
              {accept.isPending ? 'Creating your account…' : 'Create account'}
            </button>
          </>
        )}
      </form>
    </main>
  );
}
