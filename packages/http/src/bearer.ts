// The credential of an `Authorization: Bearer <token>` header, parsed one way for every service
// that takes API keys (management's personal keys, decide's local evaluation keys).

/** The token; undefined when there is no header, null when the header is not `Bearer <token>`. */
export function bearerToken(header: string | undefined): string | null | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}
