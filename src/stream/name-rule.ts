/**
 * The one rule for the names of streams, sources and destinations, and the
 * one wording of it that every refusal quotes (the message is made from the
 * rule, so callers are never told a name is fine that is then refused).
 */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** NAME_PATTERN in words. */
export const NAME_RULE = "1-64 characters: letters, digits, '_', '.', '-', starting with a letter or digit";
