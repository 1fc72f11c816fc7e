package zkwire_test

import (
	"errors"
	"testing"

	"github.com/zklock/zklock/internal/zkwire"
)

// TestMultiValidate: a multi carries create, create2, createContainer,
// createTTL, delete, setData and check, each with its own record (by
// value or non-nil pointer); anything else is a *MultiOpError naming
// the operation.
func TestMultiValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		op      zkwire.MultiOp
		wantErr bool
	}{
		{"create", zkwire.MultiOp{Type: zkwire.OpCreate, Req: zkwire.CreateRequest{Path: "/a"}}, false},
		{"create2 by pointer", zkwire.MultiOp{Type: zkwire.OpCreate2, Req: &zkwire.CreateRequest{Path: "/a"}}, false},
		{"createContainer", zkwire.MultiOp{Type: zkwire.OpCreateContainer, Req: zkwire.CreateRequest{Path: "/a"}}, false},
		{"createTTL", zkwire.MultiOp{Type: zkwire.OpCreateTTL, Req: zkwire.CreateTTLRequest{Path: "/a"}}, false},
		{"delete", zkwire.MultiOp{Type: zkwire.OpDelete, Req: zkwire.DeleteRequest{Path: "/a"}}, false},
		{"setData", zkwire.MultiOp{Type: zkwire.OpSetData, Req: zkwire.SetDataRequest{Path: "/a"}}, false},
		{"check", zkwire.MultiOp{Type: zkwire.OpCheck, Req: zkwire.CheckVersionRequest{Path: "/a"}}, false},
		{"createTTL with a CreateRequest", zkwire.MultiOp{Type: zkwire.OpCreateTTL, Req: zkwire.CreateRequest{Path: "/a"}}, true},
		{"delete with a check's record", zkwire.MultiOp{Type: zkwire.OpDelete, Req: zkwire.CheckVersionRequest{Path: "/a"}}, true},
		{"no record", zkwire.MultiOp{Type: zkwire.OpDelete}, true},
		{"nil pointer", zkwire.MultiOp{Type: zkwire.OpSetData, Req: (*zkwire.SetDataRequest)(nil)}, true},
		{"getData", zkwire.MultiOp{Type: zkwire.OpGetData, Req: zkwire.GetDataRequest{Path: "/a"}}, true},
		{"multi", zkwire.MultiOp{Type: zkwire.OpMulti, Req: zkwire.MultiRequest{}}, true},
	}
	for _, tt := range tests {
		ok := zkwire.MultiOp{Type: zkwire.OpCheck, Req: zkwire.CheckVersionRequest{Path: "/ok"}}
		err := zkwire.MultiRequest{Ops: []zkwire.MultiOp{ok, tt.op}}.Validate()
		if !tt.wantErr {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var me *zkwire.MultiOpError
		if !errors.As(err, &me) || !errors.Is(err, zkwire.ErrInvalidOp) || me.Index != 1 || me.Type != tt.op.Type {
			t.Errorf("%s: got %v, want a *MultiOpError for operation 1", tt.name, err)
		}
	}
}

// TestMultiFirstError: the first result whose error is not OK is the
// operation that failed the transaction.
func TestMultiFirstError(t *testing.T) {
	t.Parallel()
	failed := zkwire.MultiResponse{Results: []zkwire.MultiResult{
		{Type: zkwire.OpError}, {Type: zkwire.OpError, Err: zkwire.CodeBadVersion},
		{Type: zkwire.OpError, Err: zkwire.CodeRuntimeInconsistency},
	}}
	if i, c := failed.FirstError(); i != 1 || c != zkwire.CodeBadVersion {
		t.Errorf("failed: FirstError = %d, %v", i, c)
	}
	ok := zkwire.MultiResponse{Results: []zkwire.MultiResult{{Type: zkwire.OpCheck}, {Type: zkwire.OpDelete}}}
	if i, c := ok.FirstError(); i != -1 || c != zkwire.CodeOK {
		t.Errorf("ok: FirstError = %d, %v", i, c)
	}
}

// TestMultiDecodeUnknownType: a result or operation of a type a multi
// does not carry is an ErrInvalid failure at its header, not a guess.
func TestMultiDecodeUnknownType(t *testing.T) {
	t.Parallel()
	in := wire(
		"0000000d 00 00000000", // check, ok
		"00000004 00 00000000", // getData: not in a multi response
		"ffffffff 01 ffffffff", // terminator
	)
	var res zkwire.MultiResponse
	err := res.Decode(zkwire.NewDecoder(in, 0))
	var de *zkwire.DecodeError
	if !errors.Is(err, zkwire.ErrInvalid) || !errors.As(err, &de) || de.Record != "MultiHeader" || de.Field != "type" {
		t.Errorf("response: got %v", err)
	}
	in = wire(
		"00000004 00 ffffffff",  // getData: not in a multi request
		"00000002", ascii("/a"), // path
		"00",                   // watch
		"ffffffff 01 ffffffff", // terminator
	)
	var req zkwire.MultiRequest
	if err := req.Decode(zkwire.NewDecoder(in, 0)); !errors.Is(err, zkwire.ErrInvalid) {
		t.Errorf("request: got %v", err)
	}
}

// TestMultiDecodeReplaces: decoding into a used record replaces its
// results rather than appending to them.
func TestMultiDecodeReplaces(t *testing.T) {
	t.Parallel()
	res := zkwire.MultiResponse{Results: []zkwire.MultiResult{{Type: zkwire.OpDelete}}}
	in := wire("0000000d 00 00000000", "ffffffff 01 ffffffff")
	if err := res.Decode(zkwire.NewDecoder(in, 0)); err != nil || len(res.Results) != 1 || res.Results[0].Type != zkwire.OpCheck {
		t.Errorf("got %+v, %v", res, err)
	}
}
