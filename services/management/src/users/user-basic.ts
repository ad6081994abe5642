// PostHog's basic user object, as it nests a creator or editor (`created_by`, `last_modified_by`).
import type { User } from '@sett/db';

export function userBasicJson(u: User | null | undefined) {
  return u
    ? {
        id: u.id,
        uuid: u.uuid,
        distinct_id: u.distinctId,
        first_name: u.firstName,
        last_name: u.lastName,
        email: u.email,
      }
    : null;
}
