import { app } from "./api/app";
import { withOpCount } from "./opcount";

export { Coordinator } from "./coordinator";
export { Partition } from "./partition";

export default withOpCount(app);
