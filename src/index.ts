import { app } from "./api/app";

export { Coordinator } from "./coordinator";
export { Partition } from "./partition";

export default app;
