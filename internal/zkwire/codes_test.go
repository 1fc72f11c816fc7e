package zkwire_test

import (
	"testing"

	"github.com/zklock/zklock/internal/zkwire"
)

// TestCodeValues pins every error code to KeeperException.Code's value
// and name.
func TestCodeValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code  zkwire.Code
		value int32
		name  string
	}{
		{zkwire.CodeOK, 0, "OK"},
		{zkwire.CodeSystemError, -1, "SystemError"},
		{zkwire.CodeRuntimeInconsistency, -2, "RuntimeInconsistency"},
		{zkwire.CodeDataInconsistency, -3, "DataInconsistency"},
		{zkwire.CodeConnectionLoss, -4, "ConnectionLoss"},
		{zkwire.CodeMarshallingError, -5, "MarshallingError"},
		{zkwire.CodeUnimplemented, -6, "Unimplemented"},
		{zkwire.CodeOperationTimeout, -7, "OperationTimeout"},
		{zkwire.CodeBadArguments, -8, "BadArguments"},
		{zkwire.CodeUnknownSession, -12, "UnknownSession"},
		{zkwire.CodeNewConfigNoQuorum, -13, "NewConfigNoQuorum"},
		{zkwire.CodeReconfigInProgress, -14, "ReconfigInProgress"},
		{zkwire.CodeAPIError, -100, "APIError"},
		{zkwire.CodeNoNode, -101, "NoNode"},
		{zkwire.CodeNoAuth, -102, "NoAuth"},
		{zkwire.CodeBadVersion, -103, "BadVersion"},
		{zkwire.CodeNoChildrenForEphemerals, -108, "NoChildrenForEphemerals"},
		{zkwire.CodeNodeExists, -110, "NodeExists"},
		{zkwire.CodeNotEmpty, -111, "NotEmpty"},
		{zkwire.CodeSessionExpired, -112, "SessionExpired"},
		{zkwire.CodeInvalidCallback, -113, "InvalidCallback"},
		{zkwire.CodeInvalidACL, -114, "InvalidACL"},
		{zkwire.CodeAuthFailed, -115, "AuthFailed"},
		{zkwire.CodeSessionMoved, -118, "SessionMoved"},
		{zkwire.CodeNotReadOnly, -119, "NotReadOnly"},
		{zkwire.CodeEphemeralOnLocalSession, -120, "EphemeralOnLocalSession"},
		{zkwire.CodeNoWatcher, -121, "NoWatcher"},
		{zkwire.CodeRequestTimeout, -122, "RequestTimeout"},
		{zkwire.CodeReconfigDisabled, -123, "ReconfigDisabled"},
		{zkwire.CodeSessionClosedRequireSASLAuth, -124, "SessionClosedRequireSaslAuth"},
		{zkwire.CodeQuotaExceeded, -125, "QuotaExceeded"},
		{zkwire.CodeThrottledOp, -127, "ThrottledOp"},
		{zkwire.Code(-999), -999, "Code(-999)"},
	}
	for _, tt := range tests {
		if int32(tt.code) != tt.value || tt.code.String() != tt.name {
			t.Errorf("code %d %q, want %d %q", int32(tt.code), tt.code.String(), tt.value, tt.name)
		}
	}
}

// TestOpCodeValues pins the operations to ZooDefs.OpCode.
func TestOpCodeValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op    zkwire.OpCode
		value int32
		name  string
	}{
		{zkwire.OpNotification, 0, "notification"}, {zkwire.OpCreate, 1, "create"},
		{zkwire.OpDelete, 2, "delete"}, {zkwire.OpExists, 3, "exists"},
		{zkwire.OpGetData, 4, "getData"}, {zkwire.OpSetData, 5, "setData"},
		{zkwire.OpGetACL, 6, "getACL"}, {zkwire.OpSetACL, 7, "setACL"},
		{zkwire.OpGetChildren, 8, "getChildren"}, {zkwire.OpSync, 9, "sync"},
		{zkwire.OpPing, 11, "ping"}, {zkwire.OpGetChildren2, 12, "getChildren2"},
		{zkwire.OpCheck, 13, "check"}, {zkwire.OpMulti, 14, "multi"},
		{zkwire.OpCreate2, 15, "create2"}, {zkwire.OpReconfig, 16, "reconfig"},
		{zkwire.OpCheckWatches, 17, "checkWatches"}, {zkwire.OpRemoveWatches, 18, "removeWatches"},
		{zkwire.OpCreateContainer, 19, "createContainer"}, {zkwire.OpDeleteContainer, 20, "deleteContainer"},
		{zkwire.OpCreateTTL, 21, "createTTL"}, {zkwire.OpMultiRead, 22, "multiRead"},
		{zkwire.OpAuth, 100, "auth"}, {zkwire.OpSetWatches, 101, "setWatches"},
		{zkwire.OpSASL, 102, "sasl"}, {zkwire.OpGetEphemerals, 103, "getEphemerals"},
		{zkwire.OpGetAllChildrenNumber, 104, "getAllChildrenNumber"}, {zkwire.OpSetWatches2, 105, "setWatches2"},
		{zkwire.OpAddWatch, 106, "addWatch"}, {zkwire.OpWhoAmI, 107, "whoAmI"},
		{zkwire.OpCreateSession, -10, "createSession"}, {zkwire.OpCloseSession, -11, "closeSession"},
		{zkwire.OpError, -1, "error"}, {zkwire.OpCode(10), 10, "OpCode(10)"},
	}
	for _, tt := range tests {
		if int32(tt.op) != tt.value || tt.op.String() != tt.name {
			t.Errorf("op %d %q, want %d %q", int32(tt.op), tt.op.String(), tt.value, tt.name)
		}
	}
}

// TestWatchConstants pins the xids, event types, states, create modes,
// watcher types, add-watch modes and permissions to ClientCnxn, Watcher,
// CreateMode and ZooDefs.
func TestWatchConstants(t *testing.T) {
	t.Parallel()
	got := []int32{
		zkwire.XidNotification, zkwire.XidPing, zkwire.XidAuth, zkwire.XidSetWatches,
		int32(zkwire.EventNone), int32(zkwire.EventNodeCreated), int32(zkwire.EventNodeDeleted),
		int32(zkwire.EventNodeDataChanged), int32(zkwire.EventNodeChildrenChanged),
		int32(zkwire.EventDataWatchRemoved), int32(zkwire.EventChildWatchRemoved), int32(zkwire.EventPersistentWatchRemoved),
		int32(zkwire.StateUnknown), int32(zkwire.StateDisconnected), int32(zkwire.StateNoSyncConnected),
		int32(zkwire.StateSyncConnected), int32(zkwire.StateAuthFailed), int32(zkwire.StateConnectedReadOnly),
		int32(zkwire.StateSASLAuthenticated), int32(zkwire.StateExpired), int32(zkwire.StateClosed),
		int32(zkwire.ModePersistent), int32(zkwire.ModeEphemeral), int32(zkwire.ModePersistentSequential),
		int32(zkwire.ModeEphemeralSequential), int32(zkwire.ModeContainer), int32(zkwire.ModePersistentTTL),
		int32(zkwire.ModePersistentSequentialTTL),
		int32(zkwire.WatcherChildren), int32(zkwire.WatcherData), int32(zkwire.WatcherAny),
		int32(zkwire.WatcherPersistent), int32(zkwire.WatcherPersistentRecursive),
		int32(zkwire.AddWatchPersistent), int32(zkwire.AddWatchPersistentRecursive),
		zkwire.PermRead, zkwire.PermWrite, zkwire.PermCreate, zkwire.PermDelete, zkwire.PermAdmin, zkwire.PermAll,
	}
	want := []int32{
		-1, -2, -4, -8,
		-1, 1, 2, 3, 4, 5, 6, 7,
		-1, 0, 1, 3, 4, 5, 6, -112, 7,
		0, 1, 2, 3, 4, 5, 6,
		1, 2, 3, 4, 5,
		0, 1,
		1, 2, 4, 8, 16, 31,
	}
	if len(got) != len(want) {
		t.Fatalf("%d constants, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("constant %d = %d, want %d", i, got[i], want[i])
		}
	}
}

// TestEnumStrings checks the names of event types and states.
func TestEnumStrings(t *testing.T) {
	t.Parallel()
	tests := []struct{ got, want string }{
		{zkwire.EventNone.String(), "None"},
		{zkwire.EventNodeCreated.String(), "NodeCreated"},
		{zkwire.EventNodeDeleted.String(), "NodeDeleted"},
		{zkwire.EventNodeDataChanged.String(), "NodeDataChanged"},
		{zkwire.EventNodeChildrenChanged.String(), "NodeChildrenChanged"},
		{zkwire.EventDataWatchRemoved.String(), "DataWatchRemoved"},
		{zkwire.EventChildWatchRemoved.String(), "ChildWatchRemoved"},
		{zkwire.EventPersistentWatchRemoved.String(), "PersistentWatchRemoved"},
		{zkwire.EventType(9).String(), "EventType(9)"},
		{zkwire.StateUnknown.String(), "Unknown"},
		{zkwire.StateDisconnected.String(), "Disconnected"},
		{zkwire.StateNoSyncConnected.String(), "NoSyncConnected"},
		{zkwire.StateSyncConnected.String(), "SyncConnected"},
		{zkwire.StateAuthFailed.String(), "AuthFailed"},
		{zkwire.StateConnectedReadOnly.String(), "ConnectedReadOnly"},
		{zkwire.StateSASLAuthenticated.String(), "SaslAuthenticated"},
		{zkwire.StateExpired.String(), "Expired"},
		{zkwire.StateClosed.String(), "Closed"},
		{zkwire.KeeperState(2).String(), "KeeperState(2)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%q, want %q", tt.got, tt.want)
		}
	}
}
