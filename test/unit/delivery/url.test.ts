import { describe, expect, it } from "vitest";
import { checkDestinationUrl, parseIpv6 } from "../../../src/delivery/url";

/**
 * The destination URL rules (src/delivery/url.ts) as a table: what is
 * accepted (and the normal form stored and fetched), what is refused and why.
 */
const accepted: [string, string][] = [
  ["https://hooks.example.com/edge-dedup", "https://hooks.example.com/edge-dedup"],
  ["https://HOOKS.Example.COM./x", "https://hooks.example.com/x"],
  ["https://hooks.example.com.../x?y=1", "https://hooks.example.com/x?y=1"],
  ["https://bücher.example.com/", "https://xn--bcher-kva.example.com/"],
  ["https://8.8.8.8/x", "https://8.8.8.8/x"],
  ["https://192.0.1.1/", "https://192.0.1.1/"],
  ["https://[2606:4700:4700::1111]/", "https://[2606:4700:4700::1111]/"],
  ["https://[::ffff:8.8.8.8]/", "https://[::ffff:808:808]/"],
  ["https://[64:ff9b::8.8.8.8]/", "https://[64:ff9b::808:808]/"],
  ["https://[2002:808:808::1]/", "https://[2002:808:808::1]/"],
  // Teredo with a public server (65.54.227.120) and a public client (~0xf7f7f7f7 = 8.8.8.8).
  ["https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/", "https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/"],
  ["https://api.stripe.com:8443/x?y=1", "https://api.stripe.com:8443/x?y=1"],
];

const refused: [string, RegExp][] = [
  ["https://localhost./", /localhost/],
  ["https://LOCALHOST../", /localhost/],
  ["https://ｌｏｃａｌｈｏｓｔ/", /localhost/],
  ["https://loc%61lhost/", /localhost/],
  ["https://app.localhost./", /localhost/],
  ["https://metadata.google.internal./", /\.internal/],
  ["https://metadata.google.internal/computeMetadata/v1/", /\.internal/],
  ["https://metadata/", /single-label/],
  ["https://printer.local/", /\.local\b/],
  ["https://router.home.arpa/", /\.arpa/],
  ["https://nas.lan./", /\.lan/],
  ["https://1.0.0.127.in-addr.arpa/", /\.arpa/],
  ["https://abc.onion/", /\.onion/],
  ["https://a..b.com/", /empty label/],
  ["https://127.0.0.1./", /loopback/],
  ["https://0177.1./", /loopback/],
  ["https://169.254.169.254/latest", /link-local/],
  ["https://192.0.2.7/", /documentation/],
  ["https://198.51.100.7/", /documentation/],
  ["https://203.0.113.7/", /documentation/],
  ["https://192.0.0.8/", /reserved/],
  ["https://255.255.255.255/", /reserved/],
  // IPv6 forms that carry a non-public IPv4 address.
  ["https://[64:ff9b::169.254.169.254]/", /NAT64 address of a link-local/],
  ["https://[64:ff9b::a9fe:a9fe]/", /NAT64/],
  ["https://[64:ff9b::10.0.0.1]/", /NAT64 address of a private/],
  ["https://[64:ff9b:1::8.8.8.8]/", /local-use NAT64/],
  ["https://[64:ff9b:1:ffff::1]/", /local-use NAT64/],
  ["https://[64:ff9b:2::1]/", /reserved NAT64/],
  ["https://[2002:a9fe:a9fe::]/", /6to4 address of a link-local/],
  ["https://[2002:7f00:1::1]/", /6to4 address of a loopback/],
  ["https://[2002:0a00:0001::]/", /6to4 address of a private/],
  ["https://[::127.0.0.1]/", /IPv4-compatible address of a loopback/],
  ["https://[::10.0.0.1]/", /IPv4-compatible address of a private/],
  ["https://[::ffff:127.0.0.1]/", /IPv4-mapped address of a loopback/],
  ["https://[::ffff:169.254.169.254]/", /IPv4-mapped address of a link-local/],
  ["https://[0:0:0:0:0:ffff:7f00:1]/", /IPv4-mapped/],
  ["https://[::ffff:0:10.0.0.1]/", /IPv4-translated address of a private/],
  // Teredo: the client's address is the last 32 bits inverted (~0x3ffffdd2 = 192.0.2.45; ~0x80fffffe = 127.0.0.1; ~0x56fe5601 = 169.1.169.254 is public, the server is not).
  ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", /Teredo address \(client\) of a documentation/],
  ["https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", /Teredo address \(client\) of a loopback/],
  ["https://[2001:0:a9fe:a9fe::f7f7:f7f7]/", /Teredo address \(server\) of a link-local/],
  // Other IPv6 that is not global unicast.
  ["https://[::1]/", /loopback/],
  ["https://[::]/", /unspecified/],
  ["https://[fd00::1]/", /unique-local/],
  ["https://[fe80::1]/", /link-local/],
  ["https://[fec0::1]/", /site-local/],
  ["https://[ff02::1]/", /multicast/],
  ["https://[100::1]/", /reserved/],
  ["https://[5f00::1]/", /reserved/],
  ["https://[2001:db8::1]/", /documentation/],
  ["https://[3fff:123::1]/", /documentation/],
  ["https://[2001:2::1]/", /benchmarking/],
  ["https://[2001:20::1]/", /ORCHID/],
  // The rest of the rules.
  ["http://hooks.example.com/", /https/],
  ["ftp://hooks.example.com/", /https/],
  ["https://user:pw@hooks.example.com/", /credentials/],
  ["https://hooks.example.com/#frag", /fragment/],
  ["not a url", /not a URL/],
];

describe("destination URLs: the table", () => {
  it.each(accepted)("accepts %s as %s", (input, url) => {
    expect(checkDestinationUrl(input, false)).toEqual({ ok: true, url });
    // The loopback exception changes nothing for a public URL.
    expect(checkDestinationUrl(input, true)).toEqual({ ok: true, url });
  });

  it.each(refused)("refuses %s (%s)", (input, why) => {
    const r = checkDestinationUrl(input, false);
    expect(r.ok).toBe(false);
    expect(r.ok ? "" : r.reason).toMatch(why);
  });

  it("refuses the same hosts with the loopback exception on, but for loopback itself", () => {
    for (const [input] of refused.filter(
      ([u]) => !/^https:\/\/(localhost\.|LOCALHOST\.\.|ｌｏｃａｌｈｏｓｔ|loc%61lhost|127\.0\.0\.1\.|0177\.1\.|\[::1\])/.test(u),
    )) {
      expect(checkDestinationUrl(input, true).ok, input).toBe(false);
    }
  });

  it("keeps the loopback exception exactly: localhost, 127.0.0.0/8 and [::1], over http or https, only when allowed", () => {
    for (const u of ["http://127.0.0.1:9999/hook", "http://localhost:9999/hook", "https://localhost/", "http://[::1]:8080/", "http://127.9.8.7/"]) {
      expect(checkDestinationUrl(u, false).ok, u).toBe(false);
      expect(checkDestinationUrl(u, true).ok, u).toBe(true);
    }
    expect(checkDestinationUrl("http://localhost.:9999/hook", true)).toEqual({ ok: true, url: "http://localhost:9999/hook" });
    for (const u of [
      "http://app.localhost:9999/",
      "http://[::ffff:127.0.0.1]/",
      "http://[64:ff9b::7f00:1]/",
      "http://10.0.0.1/hook",
      "http://example.com/hook",
    ]) {
      expect(checkDestinationUrl(u, true).ok, u).toBe(false);
    }
  });
});

describe("IPv6 groups", () => {
  it("reads URL()'s forms and refuses malformed ones", () => {
    expect(parseIpv6("::")).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIpv6("64:ff9b::a9fe:a9fe")).toEqual([0x64, 0xff9b, 0, 0, 0, 0, 0xa9fe, 0xa9fe]);
    expect(parseIpv6("1:2:3:4:5:6:7:8")).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIpv6("2001:db8::")).toEqual([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]);
    for (const bad of ["1:2:3", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::8", "g::1", "12345::"]) expect(parseIpv6(bad), bad).toBeNull();
  });
});
