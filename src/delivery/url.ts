/**
 * Which URLs a destination may POST to. Only an admin sets them, and only
 * public https hosts are accepted: no credentials in the URL, no IP literal
 * of a private, loopback, link-local or reserved range, no single-label or
 * internal names. Loopback over http is accepted only when the var
 * ALLOW_LOOPBACK_DESTINATIONS is "true" (local development and the tests).
 */
export type UrlCheck = { ok: true; url: string } | { ok: false; reason: string };

export function checkDestinationUrl(input: string, allowLoopback: boolean): UrlCheck {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    return { ok: false, reason: "not a URL" };
  }
  if (u.username !== "" || u.password !== "") return { ok: false, reason: "credentials in the URL are not accepted: the receiver verifies the signature instead" };
  if (u.hash !== "") return { ok: false, reason: "a URL with a #fragment is not accepted" };
  const host = u.hostname.toLowerCase();
  if (allowLoopback && isLoopback(host) && (u.protocol === "http:" || u.protocol === "https:")) return { ok: true, url: u.toString() };
  if (u.protocol !== "https:") return { ok: false, reason: "the URL must be https://" };
  const refused = refusedHost(host);
  if (refused) return { ok: false, reason: `${refused}: the host must be public` };
  return { ok: true, url: u.toString() };
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Why a host is not public, or null when it is. */
function refusedHost(host: string): string | null {
  if (host.startsWith("[")) return ipv6Refused(host.slice(1, -1));
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) return ipv4Refused(v4.slice(1).map(Number));
  if (host === "localhost" || host.endsWith(".localhost")) return "localhost";
  if (!host.includes(".")) return "a single-label host name";
  if (/\.(local|internal|intranet|lan|home|corp|private|test|invalid|example)$/.test(host)) return "a local or reserved domain";
  // A bare number is an IPv4 address in disguise (http://2130706433/ is 127.0.0.1); URL() normalizes most of them already.
  if (/^[\d.]+$/.test(host) || /^0x/i.test(host)) return "a numeric host";
  return null;
}

function ipv4Refused([a, b]: number[]): string | null {
  const ranges: [boolean, string][] = [
    [a === 0, "0.0.0.0/8"], [a === 10, "a private address"], [a === 127, "a loopback address"],
    [a === 100 && b >= 64 && b <= 127, "a shared (CGNAT) address"], [a === 169 && b === 254, "a link-local address"],
    [a === 172 && b >= 16 && b <= 31, "a private address"], [a === 192 && b === 168, "a private address"],
    [a === 192 && b === 0, "a reserved address"], [a === 198 && (b === 18 || b === 19), "a benchmarking address"],
    [a >= 224, "a multicast or reserved address"],
  ];
  return ranges.find(([hit]) => hit)?.[1] ?? null;
}

function ipv6Refused(addr: string): string | null {
  const a = addr.toLowerCase();
  if (a === "::" || a === "::1") return "a loopback or unspecified address";
  if (/^f[cd]/.test(a)) return "a unique-local address";
  if (/^fe[89ab]/.test(a)) return "a link-local address";
  if (/^ff/.test(a)) return "a multicast address";
  // IPv4-mapped (::ffff:10.0.0.1, which URL() writes as ::ffff:a00:1): judged by the IPv4 address.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (mapped) {
    const hi = parseInt(mapped[1], 16);
    const lo = parseInt(mapped[2], 16);
    return ipv4Refused([hi >> 8, hi & 255, lo >> 8, lo & 255]) ?? null;
  }
  if (a.startsWith("::ffff:")) return "an IPv4-mapped address";
  return null;
}
