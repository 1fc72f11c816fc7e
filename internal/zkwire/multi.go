package zkwire

import (
	"errors"
	"strconv"
)

// MultiHeader is jute's MultiHeader, which frames each operation of a
// multi request and each result of its response. Every operation or
// result has Done false; a header with Done true (Type -1, Err -1) ends
// the list. In a request Err is -1; in a response it is the result's
// error, CodeOK for a success.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  Code
}

// Encode appends the MultiHeader's encoding.
func (r MultiHeader) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, int32(r.Type))
	dst = AppendBool(dst, r.Done)
	return AppendInt32(dst, int32(r.Err))
}

// Decode reads a MultiHeader.
func (r *MultiHeader) Decode(d *Decoder) error {
	r.Type = OpCode(d.Int32("MultiHeader", "type"))
	r.Done = d.Bool("MultiHeader", "done")
	r.Err = Code(d.Int32("MultiHeader", "err"))
	return d.Err()
}

// multiEnd is the MultiHeader that ends a multi request or response.
var multiEnd = MultiHeader{Type: OpError, Done: true, Err: -1}

// ErrInvalidOp is the reason of every [*MultiOpError]: test for it with
// errors.Is.
var ErrInvalidOp = errors.New("zkwire: invalid multi operation")

// A MultiOpError is returned by MultiRequest.Validate for an operation a
// multi cannot carry: a code that is not a multi operation's, or a record
// that is not the code's (or a nil pointer).
type MultiOpError struct {
	Index int    // the operation's index in MultiRequest.Ops
	Type  OpCode // its code
}

// Error returns "zkwire: invalid multi operation <index> (<code>)".
func (e *MultiOpError) Error() string {
	return "zkwire: invalid multi operation " + strconv.Itoa(e.Index) + " (" + e.Type.String() +
		"): not a multi operation, or not its request record"
}

// Unwrap returns ErrInvalidOp.
func (e *MultiOpError) Unwrap() error { return ErrInvalidOp }

// A MultiOp is one operation of a MultiRequest: its code and its request
// record, by value or by pointer. The codes and their records:
// OpCreate, OpCreate2 and OpCreateContainer with a CreateRequest,
// OpCreateTTL with a CreateTTLRequest, OpDelete with a DeleteRequest,
// OpSetData with a SetDataRequest, OpCheck with a CheckVersionRequest.
type MultiOp struct {
	Type OpCode
	Req  Encodable
}

// MultiRequest is the body of OpMulti (MultiOperationRecord): operations
// that the server applies all or none of, in order, as one transaction
// with one zxid. Each goes as a MultiHeader{Type, false, -1} and its
// record, and a MultiHeader{-1, true, -1} ends the list.
type MultiRequest struct {
	Ops []MultiOp
}

// Validate returns a *MultiOpError for the first operation whose code is
// not one a multi carries, or whose record is not that code's (or is a
// nil pointer), and nil if there is none. AppendRequest calls it before
// it encodes a MultiRequest.
func (r MultiRequest) Validate() error {
	for i, op := range r.Ops {
		if !validOp(op) {
			return &MultiOpError{Index: i, Type: op.Type}
		}
	}
	return nil
}

// validOp reports whether op's record is one its code takes.
func validOp(op MultiOp) bool {
	switch op.Type {
	case OpCreate, OpCreate2, OpCreateContainer:
		return isRecord[CreateRequest](op.Req)
	case OpCreateTTL:
		return isRecord[CreateTTLRequest](op.Req)
	case OpDelete:
		return isRecord[DeleteRequest](op.Req)
	case OpSetData:
		return isRecord[SetDataRequest](op.Req)
	case OpCheck:
		return isRecord[CheckVersionRequest](op.Req)
	}
	return false
}

// isRecord reports whether r holds a T or a non-nil *T.
func isRecord[T any](r Encodable) bool {
	switch v := any(r).(type) {
	case T:
		return true
	case *T:
		return v != nil
	}
	return false
}

// Encode appends the MultiRequest's encoding. It does not check the
// operations (Validate does); an operation with no record goes with its
// header alone, which the server refuses.
func (r MultiRequest) Encode(dst []byte) []byte {
	for _, op := range r.Ops {
		dst = MultiHeader{Type: op.Type, Err: -1}.Encode(dst)
		if op.Req != nil {
			dst = op.Req.Encode(dst)
		}
	}
	return multiEnd.Encode(dst)
}

// Decode reads a MultiRequest; each operation's record is held by value.
// An operation that Validate would refuse is an ErrInvalid failure.
func (r *MultiRequest) Decode(d *Decoder) error {
	r.Ops = nil
	for {
		var h MultiHeader
		if h.Decode(d) != nil || h.Done {
			return d.Err()
		}
		op, ok := decodeOp(d, h.Type)
		if !ok {
			d.Fail("MultiHeader", "type", ErrInvalid, "operation "+h.Type.String()+" in a multi request")
			return d.Err()
		}
		r.Ops = append(r.Ops, op)
	}
}

// decodeOp reads the record of a multi operation of type t.
func decodeOp(d *Decoder, t OpCode) (MultiOp, bool) {
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer:
		var q CreateRequest
		q.Decode(d)
		return MultiOp{t, q}, true
	case OpCreateTTL:
		var q CreateTTLRequest
		q.Decode(d)
		return MultiOp{t, q}, true
	case OpDelete:
		var q DeleteRequest
		q.Decode(d)
		return MultiOp{t, q}, true
	case OpSetData:
		var q SetDataRequest
		q.Decode(d)
		return MultiOp{t, q}, true
	case OpCheck:
		var q CheckVersionRequest
		q.Decode(d)
		return MultiOp{t, q}, true
	}
	return MultiOp{}, false
}

// A MultiResult is the result of one operation of a multi
// (MultiResponse's OpResult). Type is the result's kind: OpCreate
// (Path), OpCreate2 (Path and Stat; also for OpCreateContainer and
// OpCreateTTL), OpDelete, OpSetData (Stat), OpCheck, or OpError (Err).
//
// When the transaction fails, every result is an OpError: the operations
// before the failing one have Err CodeOK (they were rolled back), the
// failing one its error, and the ones after it CodeRuntimeInconsistency
// (they were not tried). The reply's ReplyHeader.Err is CodeOK all the
// same.
type MultiResult struct {
	Type OpCode
	Err  Code
	Path string
	Stat Stat
}

// MultiResponse is the answer to OpMulti (MultiResponse): one result per
// operation, in order, each as a MultiHeader{Type, false, err} and the
// result's record, then a MultiHeader{-1, true, -1}.
type MultiResponse struct {
	Results []MultiResult
}

// FirstError returns the index and error of the first result whose Err
// is not CodeOK: the operation that failed the transaction, as the Java
// client reports it. It returns -1 and CodeOK if every operation
// succeeded.
func (r MultiResponse) FirstError() (int, Code) {
	for i, res := range r.Results {
		if res.Err != CodeOK {
			return i, res.Err
		}
	}
	return -1, CodeOK
}

// Encode appends the MultiResponse's encoding.
func (r MultiResponse) Encode(dst []byte) []byte {
	for _, res := range r.Results {
		dst = MultiHeader{Type: res.Type, Err: res.Err}.Encode(dst)
		switch res.Type {
		case OpCreate:
			dst = AppendString(dst, res.Path)
		case OpCreate2:
			dst = Create2Response{res.Path, res.Stat}.Encode(dst)
		case OpSetData:
			dst = res.Stat.Encode(dst)
		case OpError:
			dst = ErrorResponse{res.Err}.Encode(dst)
		}
	}
	return multiEnd.Encode(dst)
}

// Decode reads a MultiResponse. A result of a type it does not know is
// an ErrInvalid failure.
func (r *MultiResponse) Decode(d *Decoder) error {
	r.Results = nil
	for {
		var h MultiHeader
		if h.Decode(d) != nil || h.Done {
			return d.Err()
		}
		res := MultiResult{Type: h.Type}
		if !decodeResult(d, &res) {
			d.Fail("MultiHeader", "type", ErrInvalid, "result "+h.Type.String()+" in a multi response")
			return d.Err()
		}
		r.Results = append(r.Results, res)
	}
}

// decodeResult reads the record of a multi result of type res.Type.
func decodeResult(d *Decoder, res *MultiResult) bool {
	switch res.Type {
	case OpCreate:
		res.Path = d.Ustring("CreateResponse", "path")
	case OpCreate2:
		res.Path = d.Ustring("Create2Response", "path")
		res.Stat.Decode(d)
	case OpSetData:
		res.Stat.Decode(d)
	case OpError:
		res.Err = Code(d.Int32("ErrorResponse", "err"))
	case OpDelete, OpCheck:
	default:
		return false
	}
	return true
}
