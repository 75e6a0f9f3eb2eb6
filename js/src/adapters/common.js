// What every adapter shares: option checks, the context's texts, role refusals, and the
// Python reading of "blank" text, so that a JavaScript adapter builds the same body as its
// Python twin (python/runcontext/adapters/; docs/JAVASCRIPT.md, *Adapters*).

import { checkContext } from "../index.js";

/** A JSON object as the adapters read one: any object that is not an array. */
export function isMapping(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `object[key]` when it is the object's own member, else `undefined` (never a prototype's). */
export function own(object, key) {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** True when `object[key]` is present and not `null` (Python's `.get(key) is not None`). */
export function present(object, key) {
  const value = own(object, key);
  return value !== undefined && value !== null;
}

export function typeName(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "Array";
  if (typeof value === "object") return value.constructor?.name ?? "object";
  return typeof value;
}

export const quoted = (text) => JSON.stringify(text);

// Python's str.isspace() set: what `not text.strip()` calls blank. It differs from
// String.prototype.trim's (U+001C–U+001F and U+0085 are blank here, U+FEFF is not).
const BLANK = /^[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

/** True for text with no visible character (the APIs refuse such a text block). */
export function isBlank(text) {
  return BLANK.test(text);
}

export function checkChoice(argument, value, choices) {
  if (typeof value !== "string") {
    throw new TypeError(`${argument}: expected a string, got ${typeName(value)}`);
  }
  if (!choices.includes(value)) {
    throw new RangeError(`${argument}: expected ${choices.map(quoted).join(" or ")}, got ${quoted(value)}`);
  }
}

/**
 * The options object of `adapter`, with `defaults` filled in for members that are missing or
 * `undefined`. An unknown member is refused: a misspelt option would otherwise be ignored.
 */
export function readOptions(adapter, options, defaults) {
  if (options === undefined || options === null) return { ...defaults };
  if (!isMapping(options)) {
    throw new TypeError(`${adapter}: expected an options object, got ${typeName(options)}`);
  }
  const read = { ...defaults };
  for (const key of Object.keys(options)) {
    if (!Object.hasOwn(defaults, key)) {
      throw new TypeError(
        `${adapter}: unknown option ${quoted(key)}; expected ${Object.keys(defaults).map(quoted).join(", ")}`);
    }
    if (options[key] !== undefined) read[key] = options[key];
  }
  return read;
}

export function contextTexts(context) {
  const rc = checkContext(context);
  return rc === null ? [null, null] : [rc.headText, rc.tailText];
}

export function badRole(role, roles, where, api) {
  if (typeof role !== "string") {
    throw new TypeError(`${where}.role: expected a string, got ${typeName(role)}`);
  }
  throw new RangeError(
    `${where}.role: ${api} does not accept the role ${quoted(role)}; expected one of ${[...roles].sort().join(", ")}`);
}

export function checkRoles(messages, roles, argument, api) {
  messages.forEach((message, index) => {
    const role = own(message, "role");
    if (typeof role !== "string" || !roles.has(role)) badRole(role, roles, `${argument}[${index}]`, api);
  });
}
