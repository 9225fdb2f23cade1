/**
 * The HTTP reference as Markdown, rendered from the OpenAPI document
 * (openApiDocument(), the one /openapi.json serves) rather than from the
 * routes' own list, so whatever the document says shows here too. Schemas are
 * read as plain JSON Schema: a response schema added to the document later
 * gets its field table with no change here. `npm run docs:api` writes the
 * result into docs/reference/http-api.md (test/unit/api/reference.test.ts).
 */

type Schema = Record<string, any>;
type Doc = Record<string, any>;

const METHODS = ["get", "put", "post", "patch", "delete"] as const;

export interface ReferenceOptions {
  /** where the problem types are described, relative to the Markdown file */
  errorsHref?: string;
}

/** The anchor GitHub gives an operation's heading (`### \`GET /v1/streams\``): lowercase, punctuation dropped. */
export function operationAnchor(method: string, path: string): string {
  return `${method} ${path}`
    .toLowerCase()
    .replace(/[^a-z0-9_\- ]/g, "")
    .replace(/ /g, "-");
}

interface Op {
  method: string;
  path: string;
  op: Schema;
}

function operations(doc: Doc): Op[] {
  return Object.entries((doc.paths ?? {}) as Record<string, Schema>).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => (METHODS as readonly string[]).includes(m))
      .map((method) => ({ method, path, op: item[method] as Schema })),
  );
}

/** A table cell: one line, pipes escaped. */
const cell = (s: string) => s.replace(/\r?\n/g, " ").replace(/\|/g, "\\|");
const code = (s: unknown) => `\`${typeof s === "string" ? s : JSON.stringify(s)}\``;
const SAFE = Number.MAX_SAFE_INTEGER;

/** A compact type: `string`, `integer[]`, `map of string`, `a | b`, a $ref's name. */
export function typeOf(s: Schema | boolean | undefined): string {
  if (s === undefined || s === true || (typeof s === "object" && Object.keys(s).filter((k) => k !== "$schema" && k !== "description").length === 0))
    return "any";
  if (s === false) return "never";
  if (typeof s.$ref === "string") return s.$ref.split("/").pop()!;
  if ("const" in s) return code(s.const);
  const variants = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (variants) return variants.map(typeOf).join(" or ");
  const types: string[] = Array.isArray(s.type)
    ? s.type
    : s.type
      ? [s.type]
      : s.enum
        ? [...new Set((s.enum as unknown[]).map((v) => (v === null ? "null" : typeof v)))]
        : [];
  return (
    types
      .map((t) => {
        if (t === "array") return s.prefixItems ? `[${(s.prefixItems as Schema[]).map(typeOf).join(", ")}]` : `${wrap(typeOf(s.items))}[]`;
        if (t === "object" && !s.properties && s.additionalProperties && typeof s.additionalProperties === "object") {
          const values = typeOf(s.additionalProperties);
          return values === "any" ? "object" : `map of ${values}`;
        }
        return t;
      })
      .join(" or ") || "any"
  );
}
const wrap = (t: string) => (t.includes(" ") ? `(${t})` : t);

/** Enum, bounds, pattern and format, as words. */
function constraints(s: Schema): string[] {
  const out: string[] = [];
  if (Array.isArray(s.enum)) out.push(`one of ${s.enum.map(code).join(", ")}`);
  const range = (min: unknown, max: unknown, unit: string) => {
    const lo = typeof min === "number" && min > -SAFE ? min : undefined;
    const hi = typeof max === "number" && max < SAFE ? max : undefined;
    if (lo !== undefined && hi !== undefined) out.push(`${lo} to ${hi}${unit}`);
    else if (lo !== undefined) out.push(`at least ${lo}${unit}`);
    else if (hi !== undefined) out.push(`at most ${hi}${unit}`);
  };
  range(s.minimum, s.maximum, "");
  range(s.minLength, s.maxLength, " characters");
  range(s.minItems, s.maxItems, " items");
  range(s.minProperties, s.maxProperties, " entries");
  if (typeof s.exclusiveMinimum === "number") out.push(`more than ${s.exclusiveMinimum}`);
  if (typeof s.exclusiveMaximum === "number") out.push(`less than ${s.exclusiveMaximum}`);
  if (typeof s.pattern === "string") out.push(`matches ${code(s.pattern)}`);
  if (typeof s.format === "string") out.push(`format ${s.format}`);
  if (s.propertyNames && typeof s.propertyNames === "object") {
    const names = constraints(s.propertyNames);
    if (names.length > 0) out.push(`names: ${names.join(", ")}`);
  }
  return out;
}

/** What a field's row says besides its type: its description, then its constraints. */
function about(s: Schema): string {
  return [typeof s.description === "string" ? s.description : "", ...constraints(s)].filter(Boolean).join("; ");
}

interface Field {
  name: string;
  type: string;
  required: boolean;
  default?: unknown;
  about: string;
}

/**
 * The fields of an object schema, nested ones under dotted names: `a.b` for an
 * object, `a[].b` for an array of objects, `a.*.b` for a map's values; the
 * variants of a oneOf/anyOf/allOf contribute their fields alike.
 */
export function fields(s: Schema | undefined, prefix = ""): Field[] {
  if (!s || typeof s !== "object") return [];
  const out: Field[] = [];
  const required = new Set<string>(Array.isArray(s.required) ? s.required : []);
  for (const [name, prop] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
    const full = `${prefix}${name}`;
    out.push({ name: full, type: typeOf(prop), required: required.has(name), default: prop?.default, about: typeof prop === "object" ? about(prop) : "" });
    out.push(...nested(prop, full));
  }
  for (const variant of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])] as Schema[]) {
    for (const f of fields(variant, prefix)) if (!out.some((o) => o.name === f.name)) out.push(f);
  }
  return out;
}

/** The fields inside a property: its own properties, its array's items', its map values', its variants'. */
function nested(prop: Schema | undefined, name: string): Field[] {
  if (!prop || typeof prop !== "object") return [];
  if (prop.properties || prop.allOf) return fields(prop, `${name}.`);
  if (prop.items && typeof prop.items === "object") return nested(prop.items, `${name}[]`);
  if (prop.additionalProperties && typeof prop.additionalProperties === "object") return nested(prop.additionalProperties, `${name}.*`);
  const variants = (prop.oneOf ?? prop.anyOf ?? []) as Schema[];
  const out: Field[] = [];
  for (const v of variants) for (const f of nested(v, name)) if (!out.some((o) => o.name === f.name)) out.push(f);
  return out;
}

function fieldTable(list: Field[], first = "field"): string[] {
  return [
    `| ${first} | type | required | default | description |`,
    "|---|---|---|---|---|",
    ...list.map(
      (f) => `| ${code(f.name)} | ${cell(f.type)} | ${f.required ? "yes" : ""} | ${f.default === undefined ? "" : cell(code(f.default))} | ${cell(f.about)} |`,
    ),
  ];
}

/** A schema as a table of its fields, or as one line with its type when it has none. */
function schemaBlock(s: Schema | undefined): string[] {
  if (!s || typeof s !== "object") return [];
  const list = fields(s);
  if (list.length > 0) return ["", ...fieldTable(list)];
  const items = s.items && typeof s.items === "object" ? fields(s.items, "[].") : [];
  if (items.length > 0) return ["", `An array (${typeOf(s)}):`, "", ...fieldTable(items)];
  const what = about(s);
  return typeOf(s) === "any" && !what ? [] : ["", `Type: ${typeOf(s)}${what ? ` (${what})` : ""}.`];
}

function auth(doc: Doc, security: Schema[] | undefined): string[] {
  const schemes = (doc.components?.securitySchemes ?? {}) as Record<string, Schema>;
  const requirement = (req: Schema) =>
    Object.keys(req)
      .map((name) => {
        const s = schemes[name];
        if (!s) return code(name);
        const how =
          s.type === "http"
            ? code(`Authorization: ${s.scheme === "bearer" ? "Bearer" : s.scheme} …`)
            : s.type === "apiKey"
              ? `${code(s.name)} ${s.in}`
              : code(name);
        return s.description ? `${how}: ${s.description}` : how;
      })
      .join(" and ");
  const list = security ?? doc.security ?? [];
  if (list.length === 0) return ["**Auth:** none."];
  if (list.length === 1) return [`**Auth:** ${requirement(list[0]!)}.`];
  return ["**Auth:** one of", "", ...list.map((r: Schema) => `- ${requirement(r)}`)];
}

function parameters(params: Schema[] | undefined): string[] {
  if (!params || params.length === 0) return [];
  return [
    "",
    "| parameter | in | type | required | default | description |",
    "|---|---|---|---|---|---|",
    ...params.map((p) => {
      const s = (p.schema ?? {}) as Schema;
      const what = [p.description, ...constraints(s)].filter(Boolean).join("; ");
      return `| ${code(p.name)} | ${p.in} | ${cell(typeOf(s))} | ${p.required ? "yes" : ""} | ${s.default === undefined ? "" : cell(code(s.default))} | ${cell(what)} |`;
    }),
  ];
}

function content(c: Record<string, Schema> | undefined): [string, Schema | undefined][] {
  return Object.entries(c ?? {}).map(([media, m]) => [media, m?.schema]);
}

function operationSection(doc: Doc, { method, path, op }: Op, errorsHref: string): string[] {
  const out = [`### ${code(`${method.toUpperCase()} ${path}`)}`, ""];
  if (op.summary) out.push(`${op.summary}.`.replace(/\.\.$/, "."), "");
  if (op.description) out.push(op.description, "");
  if (op.deprecated) out.push("**Deprecated.**", "");
  out.push(...auth(doc, op.security));
  if (op.parameters?.length) out.push("", "**Parameters:**", ...parameters(op.parameters));
  if (op.requestBody) {
    const body = op.requestBody as Schema;
    const blocks = content(body.content).map(([m, s]) => [m, schemaBlock(s)] as const);
    const shown = blocks.some(([, b]) => b.length > 0);
    out.push(
      "",
      `**Body** (${blocks.map(([m]) => code(m)).join(" or ")}${body.required ? ", required" : ""})${body.description ? `: ${body.description}` : ""}${shown ? ":" : "."}`,
    );
    for (const [m, b] of blocks) {
      if (b.length > 0 && blocks.length > 1) out.push("", `As ${code(m)}:`);
      out.push(...b);
    }
  }
  const responses = Object.entries((op.responses ?? {}) as Record<string, Schema>);
  for (const [status, r] of responses.filter(([s]) => s !== "default")) {
    const media = content(r.content);
    const kind = /^2/.test(status) ? "Answers" : "Or";
    out.push("", `**${kind} ${status}**${media.length > 0 ? ` ${media.map(([m]) => code(m)).join(" or ")}` : ""}: ${r.description ?? ""}`.trimEnd());
    for (const [, s] of media) out.push(...schemaBlock(s));
    const headers = Object.entries((r.headers ?? {}) as Record<string, Schema>);
    if (headers.length > 0) out.push("", ...headers.map(([name, h]) => `- header ${code(name)}: ${h.description ?? typeOf(h.schema)}`));
  }
  const problem = responses.find(([s]) => s === "default")?.[1];
  const problemMedia = problem ? Object.keys(problem.content ?? {}) : [];
  out.push("", `**Errors:** ${problemMedia.length > 0 ? `${problemMedia.map(code).join(" or ")}, ` : ""}see [errors](${errorsHref}).`);
  return out;
}

export function apiReferenceMarkdown(doc: Doc, options: ReferenceOptions = {}): string {
  const errorsHref = options.errorsHref ?? "errors.md";
  const ops = operations(doc);
  // Tags in the document's order, then any an operation names that the list lacks.
  const declared = ((doc.tags ?? []) as Schema[]).map((t) => t.name as string);
  const used = ops.map((o) => (o.op.tags?.[0] as string | undefined) ?? "other");
  const tags = [...new Set([...declared.filter((t) => used.includes(t)), ...used])];
  const tagDescription = (t: string) => ((doc.tags ?? []) as Schema[]).find((d) => d.name === t)?.description as string | undefined;
  const heading = (t: string) => `${t[0]!.toUpperCase()}${t.slice(1)} calls`;

  const out = ["## Calls", "", "| call | does | auth |", "|---|---|---|"];
  for (const tag of tags) {
    for (const o of ops.filter((_, i) => used[i] === tag)) {
      const who = (o.op.security ?? doc.security ?? []) as Schema[];
      const schemes = [...new Set(who.flatMap((r) => Object.keys(r)))];
      out.push(
        `| [${code(`${o.method.toUpperCase()} ${o.path}`)}](#${operationAnchor(o.method, o.path)}) | ${cell(o.op.summary ?? "")} | ${schemes.length === 0 ? "none" : cell(schemes.join(", "))} |`,
      );
    }
  }
  for (const tag of tags) {
    out.push("", `## ${heading(tag)}`);
    const description = tagDescription(tag);
    if (description) out.push("", description);
    for (const o of ops.filter((_, i) => used[i] === tag)) out.push("", ...operationSection(doc, o, errorsHref));
  }
  return `${out.join("\n")}\n`;
}
