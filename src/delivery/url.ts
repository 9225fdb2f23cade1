/**
 * Which URLs a destination may POST to. Only an admin sets them, and only
 * public https hosts are accepted: no credentials in the URL, no IP literal
 * of a private, loopback, link-local or reserved range (IPv6 forms that carry
 * an IPv4 address are judged by that address), no single-label, local or
 * internal names. Loopback over http is accepted only when the var
 * ALLOW_LOOPBACK_DESTINATIONS is "true" (local development and the tests).
 *
 * The host is judged as fetch() will use it: parsed by the WHATWG URL parser
 * (case, IDNA/punycode, percent-escapes, IPv4 shorthands like 0177.1), then
 * without trailing dots (`localhost.` is localhost), and the URL answered is
 * that normal form, so what was checked is what is fetched. The sender checks
 * again before every round (the rules may have tightened since the PUT).
 * Pure: no Cloudflare imports, no DNS (on Cloudflare a Worker cannot reach
 * private networks anyway; this keeps the obvious ways in closed).
 */
export type UrlCheck = { ok: true; url: string } | { ok: false; reason: string };

export function checkDestinationUrl(input: string, allowLoopback: boolean): UrlCheck {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    return { ok: false, reason: "not a URL" };
  }
  if (u.username !== "" || u.password !== "")
    return { ok: false, reason: "credentials in the URL are not accepted: the receiver verifies the signature instead" };
  if (u.hash !== "") return { ok: false, reason: "a URL with a #fragment is not accepted" };
  if (u.protocol !== "https:" && u.protocol !== "http:") return { ok: false, reason: "the URL must be https://" };
  const trimmed = u.hostname.replace(/\.+$/, "");
  if (trimmed === "") return { ok: false, reason: "the URL has no host" };
  if (trimmed !== u.hostname) {
    // The setter parses the host again, so "0177.1." becomes 127.0.0.1 as fetch() would read it (a host it refuses is left as it was).
    u.hostname = trimmed;
    if (u.hostname.endsWith(".")) return { ok: false, reason: "the host is not valid" };
  }
  const host = u.hostname.toLowerCase();
  if (allowLoopback && isLoopback(host)) return { ok: true, url: u.toString() };
  if (u.protocol !== "https:") return { ok: false, reason: "the URL must be https://" };
  const refused = refusedHost(host);
  if (refused) return { ok: false, reason: `${refused}: the host must be public` };
  return { ok: true, url: u.toString() };
}

/** The loopback exception (ALLOW_LOOPBACK_DESTINATIONS): localhost, 127.0.0.0/8 and [::1], nothing else. */
function isLoopback(host: string): boolean {
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Names that never lead to a public service: special-use (RFC 6761, 6762, 7686, 8375, 9476) and the usual private suffixes. */
const LOCAL_SUFFIXES = [
  "localhost",
  "local",
  "internal",
  "intranet",
  "lan",
  "home",
  "corp",
  "private",
  "localdomain",
  "test",
  "invalid",
  "example",
  "onion",
  "alt",
  "arpa",
];

/** Why a host (normalised: lower case, punycode, no trailing dot) is not public, or null when it is. */
function refusedHost(host: string): string | null {
  if (host.startsWith("[")) {
    const groups = parseIpv6(host.slice(1, -1));
    return groups ? ipv6Refused(groups) : "not a valid IPv6 address";
  }
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) return ipv4Refused(v4.slice(1).map(Number));
  if (host === "localhost" || host.endsWith(".localhost")) return "localhost";
  if (!host.includes(".")) return "a single-label host name";
  if (host.split(".").includes("")) return "a host name with an empty label";
  const tld = host.slice(host.lastIndexOf(".") + 1);
  if (LOCAL_SUFFIXES.includes(tld)) return `a local or reserved domain (.${tld})`;
  // A bare number is an IPv4 address in disguise (http://2130706433/ is 127.0.0.1); URL() normalizes most of them already.
  if (/^[\d.]+$/.test(host) || /^0x/i.test(host)) return "a numeric host";
  return null;
}

/** IPv4 ranges that are not public (IANA's special-purpose registry), as [first octets, prefix length, what]. */
const IPV4_RANGES: [number[], number, string][] = [
  [[0], 8, "0.0.0.0/8"],
  [[10], 8, "a private address"],
  [[100, 64], 10, "a shared (CGNAT) address"],
  [[127], 8, "a loopback address"],
  [[169, 254], 16, "a link-local address"],
  [[172, 16], 12, "a private address"],
  [[192, 0, 0], 24, "a reserved address"],
  [[192, 0, 2], 24, "a documentation address"],
  [[192, 88, 99], 24, "a 6to4 relay address"],
  [[192, 168], 16, "a private address"],
  [[198, 18], 15, "a benchmarking address"],
  [[198, 51, 100], 24, "a documentation address"],
  [[203, 0, 113], 24, "a documentation address"],
  [[224], 3, "a multicast or reserved address"],
];

function ipv4Refused(octets: number[]): string | null {
  const n = ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
  for (const [first, bits, what] of IPV4_RANGES) {
    const base = first
      .concat([0, 0, 0])
      .slice(0, 4)
      .reduce((a, o) => a * 256 + o, 0);
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    if ((n & mask) >>> 0 === (base & mask) >>> 0) return what;
  }
  return null;
}

/** The IPv4 address in two 16-bit groups. */
const v4Of = (hi: number, lo: number) => [hi >> 8, hi & 255, lo >> 8, lo & 255];

/**
 * Why an IPv6 address is not public. Only global unicast (2000::/3) is, less
 * its documentation and benchmarking ranges; the forms that embed an IPv4
 * address (IPv4-mapped and -compatible, SIIT, NAT64, 6to4, Teredo) are judged
 * by that address, since that is where a packet to them ends up.
 */
function ipv6Refused(g: number[]): string | null {
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const embedded = (what: string, hi: number, lo: number) => {
    const r = ipv4Refused(v4Of(hi, lo));
    return r ? `${what} of ${r}` : null;
  };
  if (zero(0, 7) && g[7] <= 1) return "a loopback or unspecified address";
  if (zero(0, 5) && g[5] === 0xffff) return embedded("an IPv4-mapped address", g[6], g[7]);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return embedded("an IPv4-translated address", g[6], g[7]);
  if (zero(0, 6)) return embedded("an IPv4-compatible address", g[6], g[7]);
  if (g[0] === 0x64 && g[1] === 0xff9b) {
    if (zero(2, 6)) return embedded("a NAT64 address", g[6], g[7]);
    return g[2] === 1 ? "a local-use NAT64 address (64:ff9b:1::/48)" : "a reserved NAT64 address";
  }
  if (g[0] === 0x2002) return embedded("a 6to4 address", g[1], g[2]);
  if (g[0] === 0x2001 && g[1] === 0) {
    // Teredo: the server's IPv4 address in bits 32-63, the client's in the last 32 bits, inverted.
    return embedded("a Teredo address (server)", g[2], g[3]) ?? embedded("a Teredo address (client)", ~g[6] & 0xffff, ~g[7] & 0xffff);
  }
  if ((g[0] & 0xfe00) === 0xfc00) return "a unique-local address";
  if ((g[0] & 0xffc0) === 0xfe80) return "a link-local address";
  if ((g[0] & 0xffc0) === 0xfec0) return "a site-local address";
  if ((g[0] & 0xff00) === 0xff00) return "a multicast address";
  if ((g[0] & 0xe000) !== 0x2000) return "a reserved IPv6 address";
  if (g[0] === 0x2001 && g[1] === 0xdb8) return "a documentation address";
  if (g[0] === 0x3fff && (g[1] & 0xf000) === 0) return "a documentation address";
  if (g[0] === 0x2001 && g[1] === 2 && g[2] === 0) return "a benchmarking address";
  if (g[0] === 0x2001 && ((g[1] & 0xfff0) === 0x10 || (g[1] & 0xfff0) === 0x20)) return "an ORCHID address";
  return null;
}

/** The eight 16-bit groups of an IPv6 address as URL() writes it (hex groups, at most one "::"), or null. */
export function parseIpv6(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const part = (s: string) => (s === "" ? [] : s.split(":"));
  const head = part(halves[0]);
  const tail = halves.length === 2 ? part(halves[1]) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (!all.every((x) => /^[0-9a-f]{1,4}$/i.test(x))) return null;
  return all.map((x) => parseInt(x, 16));
}
