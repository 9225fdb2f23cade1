import { app } from "./api/app";
import { withOpCount } from "./opcount";

export { Coordinator } from "./coordinator";
export { Partition } from "./partition";
export { Registry } from "./registry";

export default withOpCount(app);
