// The one error class of keyless's browser code: what a host call, the chat page, the extension's
// worker or the wasm core failed with. Its code is a `Code` from the generated contract, so a
// caller tests `e.code`, never the text.
import type { Code, Diagnostic, WireError } from "../../extension/src/generated/core.js";

/// What a failure carries besides its code and message.
export interface ErrorDetails {
  /// The setting or selector key the failure is about (a selector the user can pick).
  key?: string | undefined;
  /// How to fix it, when the finder knows.
  help?: string | undefined;
  /// A host call's HTTP status (0 when nothing answered); undefined for other failures.
  status?: number | undefined;
  /// A refused piece's findings (`PUT /v1/pieces/{name}`).
  findings?: Diagnostic[] | undefined;
  /// When a host call may be tried again, in seconds (a pairing lock).
  retryAfterSeconds?: number | undefined;
}

/// `message` is the text after the code; the user reads both (`errorText`).
export class KeylessError extends Error {
  readonly key: string | undefined;
  readonly help: string | undefined;
  readonly status: number | undefined;
  readonly findings: Diagnostic[];
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: Code,
    message: string,
    details: ErrorDetails = {},
  ) {
    super(message);
    this.key = details.key;
    this.help = details.help;
    this.status = details.status;
    this.findings = details.findings ?? [];
    this.retryAfterSeconds = details.retryAfterSeconds;
  }

  /// The failure another part of the extension passed on the wire.
  static of(wire: WireError): KeylessError {
    return new KeylessError(wire.code, wire.message, { key: wire.key, help: wire.help });
  }

  /// Anything a `catch` got, as a KeylessError: the wasm core's errors carry their failure in
  /// `wire`; what carries no code (a browser API's own error, a bug) is KA_INTERNAL.
  static from(e: unknown): KeylessError {
    if (e instanceof KeylessError) return e;
    if (e instanceof Error) {
      const wire = (e as Error & { wire?: WireError }).wire;
      if (wire && typeof wire.code === "string" && typeof wire.message === "string") return KeylessError.of(wire);
      return new KeylessError("KA_INTERNAL", e.message);
    }
    return new KeylessError("KA_INTERNAL", String(e));
  }

  /// `String(e)` reads `Error: KA_… message`: the views that print a caught error with String show
  /// its code too.
  override toString(): string {
    return `${this.name}: ${errorText(this)}`;
  }

  /// The failure as it goes on the wire between the extension's parts.
  get wire(): WireError {
    return {
      code: this.code,
      message: this.message,
      ...(this.key === undefined ? {} : { key: this.key }),
      ...(this.help === undefined ? {} : { help: this.help }),
    };
  }
}

/// As every view shows a failure (a KeylessError or one from the wire): `KA_… message`.
export function errorText(e: { code: Code; message: string }): string {
  return `${e.code} ${e.message}`;
}
