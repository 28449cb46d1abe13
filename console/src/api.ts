// Calls to jetgate's REST API, same origin, with the user's credential.
// The credential lives in sessionStorage only: it goes when the tab does.
import { errorText, failureText } from "./logic";

const KEY = "jetgate.credential";

export function credential(): string {
  return sessionStorage.getItem(KEY) ?? "";
}

export function setCredential(v: string): void {
  if (v) sessionStorage.setItem(KEY, v);
  else sessionStorage.removeItem(KEY);
}

/** An API answer that is not 2xx. */
export class APIError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export async function call<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const cred = credential();
  if (cred) headers.Authorization = `Bearer ${cred}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = null;
  }
  if (!res.ok) throw new APIError(res.status, errorText(res.status, json));
  return json as T;
}

/** What a failed call says: its status and the gateway's message. */
export function why(e: unknown): string {
  return e instanceof APIError ? failureText(e.status, e.message) : e instanceof Error ? e.message : String(e);
}

// The answers, as protobuf's JSON mapping writes them (int64 as strings,
// fields left out when zero).
export type StreamSummary = {
  name: string; subjects?: string[]; messages?: string; bytes?: string; firstSeq?: string; lastSeq?: string; consumers?: number;
};
export type ConsumerSummary = {
  name: string; numPending?: string; numAckPending?: string; numRedelivered?: string; numWaiting?: string;
  oldestUnackedAge?: string; paused?: boolean; pauseUntil?: string; deadLetters?: string; pushed?: boolean;
  gatewayLeases?: string; priorityGroups?: string[]; deadLetterConfigured?: boolean; createdBy?: string;
};
export type SequencePair = { consumerSeq?: string; streamSeq?: string; lastActive?: string };
export type GetConsumer = {
  config?: Record<string, unknown> & { priorityGroups?: string[]; filterSubjects?: string[]; metadata?: Record<string, string> };
  state?: {
    numPending?: string; numAckPending?: string; numRedelivered?: string; numWaiting?: string; paused?: boolean;
    delivered?: SequencePair; ackFloor?: SequencePair;
    pauseRemaining?: string; priorityGroups?: { group: string; pinned?: boolean; pinnedSince?: string }[];
  };
  gatewayLeases?: string; deadLetters?: string; oldestUnackedAge?: string;
  push?: { url?: string; inFlight?: number; endpointUp?: boolean; lastError?: string; lastErrorTime?: string };
};
export type Leases = {
  holders?: {
    principal?: string; leases?: string; oldestSince?: string; oldestAge?: string; replicas?: string[];
    latestDeadline?: string; kept?: string;
  }[];
  replicas?: string[]; missingReplicas?: string[];
};
export type DeadLetter = {
  seq: string; subject?: string; headers?: Record<string, { values?: string[] }>; dataPreview?: string; dataSize?: string;
  time?: string; reason?: string; streamSeq?: string; deliveries?: string;
};
export type DeadLetters = { deadLetters?: DeadLetter[]; nextPageToken?: string; total?: string };
