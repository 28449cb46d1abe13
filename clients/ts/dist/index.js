export { Client } from "./client.js";
export { AckPolicy, DeliverPolicy, PriorityPolicy } from "./info.js";
export { Message } from "./message.js";
export { Subscription } from "./subscriber.js";
export { SettleError, FinalError, LeaseError, reasonOf } from "./errors.js";
export * as v1 from "./gen/jetgate/v1/consumer_pb.js";
export * as streamv1 from "./gen/jetgate/v1/stream_pb.js";
