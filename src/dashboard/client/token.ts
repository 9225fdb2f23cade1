// The admin token lives in this tab's sessionStorage only, and leaves it only as an Authorization header.

const TOKEN_KEY = "edge-dedup.adminToken";

export function readToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}
