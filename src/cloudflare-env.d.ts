// Ties the runtime's global `env` / `exports` types (cloudflare:workers) to ours.
type EdgeDedupEnv = import("./env").Env;
declare namespace Cloudflare {
  interface Env extends EdgeDedupEnv {}
  interface GlobalProps {
    mainModule: typeof import("./index");
    durableNamespaces: "Coordinator" | "Partition" | "Runner" | "Registry";
  }
}
