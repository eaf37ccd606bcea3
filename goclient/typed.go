package goclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ReasonPayloadDecodeFailed is the reason code of a job that JSONHandler or
// JSONTxHandler failed because its payload did not decode into the
// handler's type.
const ReasonPayloadDecodeFailed = "payload_decode_failed"

// PayloadDecodeError says why a job's payload did not decode into the
// handler's Go type. It never holds a value from the payload: only the Go
// type, the JSON field path, the kind of JSON value found and the byte
// offset. JSONHandler and JSONTxHandler return it wrapped in Fail, so the
// worker fails the job with ReasonPayloadDecodeFailed and logs this text.
type PayloadDecodeError struct {
	// Type is the Go type the payload was decoded into, for example "main.order".
	Type string
	// Field is the dotted JSON field path where decoding stopped, when known.
	Field string
	// Found is the kind of JSON value found there ("string", "number",
	// "object", ...), when known. Never the value itself.
	Found string
	// Offset is the byte offset in the payload where decoding stopped, when known.
	Offset int64
	// err is the underlying decoder error, kept for errors.As; its text is
	// never used because it can quote the payload.
	err error
}

// Error describes the failure without any value from the payload.
func (e *PayloadDecodeError) Error() string {
	msg := "leasefence: payload does not decode into " + e.Type
	if e.Field != "" {
		msg += ": field " + e.Field
	}
	if e.Found != "" {
		msg += ": found a JSON " + e.Found
	}
	return fmt.Sprintf("%s (at byte %d)", msg, e.Offset)
}

// Unwrap returns the decoder's own error (a *json.SyntaxError, a
// *json.UnmarshalTypeError, ...). Do not log its text: it can quote the
// payload.
func (e *PayloadDecodeError) Unwrap() error { return e.err }

// JSONHandler returns a Handler that decodes each job's payload into a T
// with encoding/json and calls handle with it. A payload that does not
// decode fails the job with ReasonPayloadDecodeFailed (handle is not
// called); the worker logs the *PayloadDecodeError.
func JSONHandler[T any](handle func(ctx context.Context, job Job, payload T) error) Handler {
	return func(ctx context.Context, job Job) error {
		payload, err := decodePayload[T](job)
		if err != nil {
			return err
		}
		return handle(ctx, job, payload)
	}
}

// JSONTxHandler is JSONHandler for a TxHandler: handle writes its target
// rows in tx, the transaction that then completes the job.
func JSONTxHandler[T any](handle func(ctx context.Context, tx pgx.Tx, job Job, payload T) error) TxHandler {
	return func(ctx context.Context, tx pgx.Tx, job Job) error {
		payload, err := decodePayload[T](job)
		if err != nil {
			return err
		}
		return handle(ctx, tx, job, payload)
	}
}

// decodePayload decodes job's payload into a T, or returns
// FailPermanently(ReasonPayloadDecodeFailed, *PayloadDecodeError).
func decodePayload[T any](job Job) (T, error) {
	var payload T
	err := json.Unmarshal(job.Payload(), &payload)
	if err == nil {
		return payload, nil
	}
	de := &PayloadDecodeError{Type: reflect.TypeFor[T]().String(), err: err}
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		de.Offset = syntax.Offset
	case errors.As(err, &typeErr):
		de.Offset, de.Field, de.Found = typeErr.Offset, typeErr.Field, jsonKind(typeErr.Value)
	}
	return payload, FailPermanently(ReasonPayloadDecodeFailed, de)
}

// jsonKind keeps the kind word of a json.UnmarshalTypeError.Value, which
// can be "number 300" (the value itself) for an out-of-range number.
func jsonKind(value string) string {
	kind, _, _ := strings.Cut(value, " ")
	return kind
}
