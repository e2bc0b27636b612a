// keyless-host's `/v1` API, typed once from the generated contract: the extension's worker and the
// dashboard both call the host through this table, so a route's body and its answer have one
// type each (defined in Rust, core/src/api.rs).
import type {
  Answered,
  AsRunDetail,
  AsRunRequest,
  AsRunSummary,
  AuditEntry,
  BatchDetail,
  CancelRequested,
  ChatTabReport,
  ChatTabState,
  ErrorBody,
  FileDiff,
  Generation,
  GenerationAnswer,
  GenerationClaim,
  GenerationSeen,
  HandoverAnswer,
  HandoverRequest,
  HostEvent,
  PairRequest,
  Paired,
  PendingPrompt,
  PieceDeleted,
  PieceSaved,
  PieceSummary,
  PieceText,
  PieceWrite,
  PromptAnswer,
  ReplyAnswer,
  ReplyRequest,
  SessionDetail,
  SessionRequest,
  SessionSettings,
  SessionSettingsRequest,
  SessionStarted,
  SessionSummary,
  Status,
  Undone,
} from "../../extension/src/generated/core.js";
import { KeylessError } from "./error";

/// One request: its method, path and body, and (as a type only) the answer it gets.
export interface Call<Answer> {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  body?: unknown;
  /// Never set: carries the answer's type.
  answer?: Answer;
}

const get = <A>(path: string): Call<A> => ({ method: "GET", path });
const post = <A>(path: string, body: unknown): Call<A> => ({ method: "POST", path, body });
const put = <A>(path: string, body: unknown): Call<A> => ({ method: "PUT", path, body });
const del = <A>(path: string): Call<A> => ({ method: "DELETE", path });
const seg = encodeURIComponent;

/// Every route the extension and the dashboard use.
export const v1 = {
  pair: (req: PairRequest) => post<Paired>("/v1/pair", req),
  status: () => get<Status>("/v1/status"),
  pieces: () => get<PieceSummary[]>("/v1/pieces"),
  piece: (name: string) => get<PieceText>(`/v1/pieces/${seg(name)}`),
  savePiece: (name: string, req: PieceWrite) => put<PieceSaved>(`/v1/pieces/${seg(name)}`, req),
  deletePiece: (name: string) => del<PieceDeleted>(`/v1/pieces/${seg(name)}`),
  sessions: () => get<SessionSummary[]>("/v1/sessions"),
  startSession: (req: SessionRequest) => post<SessionStarted>("/v1/sessions", req),
  session: (id: string) => get<SessionDetail>(`/v1/sessions/${seg(id)}`),
  sessionDiff: (id: string) => get<FileDiff[]>(`/v1/sessions/${seg(id)}/diff`),
  handover: (id: string, req: HandoverRequest) => post<HandoverAnswer>(`/v1/sessions/${seg(id)}/handover`, req),
  reply: (id: string, req: ReplyRequest) => post<ReplyAnswer>(`/v1/sessions/${seg(id)}/replies`, req),
  cancel: (id: string) => post<CancelRequested>(`/v1/sessions/${seg(id)}/cancel`, {}),
  sessionSettings: (id: string, req: SessionSettingsRequest) => post<SessionSettings>(`/v1/sessions/${seg(id)}/settings`, req),
  batch: (id: string) => get<BatchDetail>(`/v1/batches/${seg(id)}`),
  undo: (id: string) => post<Undone>(`/v1/batches/${seg(id)}/undo`, {}),
  audit: (limit: number) => get<AuditEntry[]>(`/v1/audit?limit=${limit}`),
  confirmations: () => get<PendingPrompt[]>("/v1/confirmations"),
  answer: (id: number, req: PromptAnswer) => post<Answered>(`/v1/confirmations/${id}`, req),
  asRuns: () => get<AsRunSummary[]>("/v1/as/runs"),
  asRun: (id: string) => get<AsRunDetail>(`/v1/as/runs/${seg(id)}`),
  startAsRun: (req: AsRunRequest) => post<AsRunSummary>("/v1/as/runs", req),
  generations: () => get<Generation[]>("/v1/generations"),
  chatTab: (req: ChatTabReport) => post<ChatTabState>("/v1/chat-tab", req),
  claimGeneration: (id: string, req: GenerationClaim) => post<Generation>(`/v1/generations/${seg(id)}/claim`, req),
  answerGeneration: (id: string, req: GenerationAnswer) => post<Generation>(`/v1/generations/${seg(id)}`, req),
  seeGeneration: (id: string, req: GenerationSeen) => post<Generation>(`/v1/generations/${seg(id)}/seen`, req),
  cancelGeneration: (id: string, by: string) => post<Generation>(`/v1/generations/${seg(id)}/cancel`, { by }),
};

/// Sends a call to the host at `base` ("" for the page's own origin) with a bearer token. A failed
/// call throws a KeylessError: the host's code and message, or the network's (KA_HOST_UNREACHABLE,
/// KA_NETWORK_OFFLINE), with the HTTP status (0 when nothing answered).
export async function callHost<A>(base: string, token: string, call: Call<A>): Promise<A> {
  let res: Response;
  try {
    res = await fetch(`${base}${call.path}`, {
      method: call.method,
      headers: { authorization: `Bearer ${token}`, ...(call.body === undefined ? {} : { "content-type": "application/json" }) },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
    });
  } catch (e) {
    if (!navigator.onLine) throw new KeylessError("KA_NETWORK_OFFLINE", "the browser is offline; nothing was sent", { status: 0 });
    throw new KeylessError("KA_HOST_UNREACHABLE", `keyless-host is not reachable at ${base || "this page's origin"} (${String(e)}); is keyless-host serve running?`, { status: 0 });
  }
  if (!res.ok) {
    const err = await errorBody(res);
    throw new KeylessError(err.code, err.message, { status: res.status, findings: err.findings, retryAfterSeconds: err.retry_after_seconds });
  }
  // The answer's JSON is the route's type: the host writes it from the same Rust type.
  const answer: A = await res.json();
  return answer;
}

async function errorBody(res: Response): Promise<ErrorBody> {
  const text = await res.text();
  try {
    const body: Partial<ErrorBody> = JSON.parse(text);
    return {
      code: body.code ?? "KA_INTERNAL",
      message: body.message ?? `HTTP ${res.status}`,
      findings: body.findings ?? [],
      ...(typeof body.retry_after_seconds === "number" ? { retry_after_seconds: body.retry_after_seconds } : {}),
    };
  } catch {
    return { code: "KA_INTERNAL", message: text || `HTTP ${res.status}` };
  }
}

/// One event of the host's event stream (a `data:` line of `GET /v1/events`).
export function hostEvent(data: string): HostEvent | null {
  try {
    const event: HostEvent = JSON.parse(data);
    return typeof event === "object" && event !== null && "type" in event ? event : null;
  } catch {
    return null;
  }
}
