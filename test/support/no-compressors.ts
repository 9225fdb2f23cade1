/**
 * The workers tests' stand-in for hyparquet-compressors, which icebird imports
 * and which compiles WebAssembly when loaded (workerd refuses it). The
 * table's files need none of it: its Avro files are uncompressed and its
 * Parquet codec is one hyparquet reads by itself, so nothing here is called.
 */
export const compressors = {};

export function gunzip(): never {
  throw new Error("gzip: the table writes no compressed Avro");
}
