package zkwire

import "strconv"

// An OpCode is a request's operation, the type field of a RequestHeader
// and of a MultiHeader (ZooDefs.OpCode).
type OpCode int32

// The operations of ZooDefs.OpCode. OpError marks a failed operation's
// result inside a multi response; OpCreateSession and OpNotification are
// the server's own.
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

// opNames is read only: the names of ZooDefs.OpCode.
var opNames = map[OpCode]string{
	OpNotification:         "notification",
	OpCreate:               "create",
	OpDelete:               "delete",
	OpExists:               "exists",
	OpGetData:              "getData",
	OpSetData:              "setData",
	OpGetACL:               "getACL",
	OpSetACL:               "setACL",
	OpGetChildren:          "getChildren",
	OpSync:                 "sync",
	OpPing:                 "ping",
	OpGetChildren2:         "getChildren2",
	OpCheck:                "check",
	OpMulti:                "multi",
	OpCreate2:              "create2",
	OpReconfig:             "reconfig",
	OpCheckWatches:         "checkWatches",
	OpRemoveWatches:        "removeWatches",
	OpCreateContainer:      "createContainer",
	OpDeleteContainer:      "deleteContainer",
	OpCreateTTL:            "createTTL",
	OpMultiRead:            "multiRead",
	OpAuth:                 "auth",
	OpSetWatches:           "setWatches",
	OpSASL:                 "sasl",
	OpGetEphemerals:        "getEphemerals",
	OpGetAllChildrenNumber: "getAllChildrenNumber",
	OpSetWatches2:          "setWatches2",
	OpAddWatch:             "addWatch",
	OpWhoAmI:               "whoAmI",
	OpCreateSession:        "createSession",
	OpCloseSession:         "closeSession",
	OpError:                "error",
}

// String returns the operation's name in ZooDefs.OpCode ("create",
// "getChildren2"), or "OpCode(n)" for a code it does not know.
func (o OpCode) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return "OpCode(" + strconv.Itoa(int(o)) + ")"
}

// The special xids of ClientCnxn: a RequestHeader or ReplyHeader with one
// of them is not an ordinary request or its reply. Ordinary xids are
// positive.
const (
	// XidNotification marks a watch event the server sends unasked: a
	// ReplyHeader with it is followed by a WatcherEvent.
	XidNotification int32 = -1
	// XidPing is the xid of a ping (OpPing, no body) and of its reply.
	XidPing int32 = -2
	// XidAuth is the xid of an AuthPacket (OpAuth) and of its reply,
	// which the server sends as soon as it has checked the credentials,
	// ahead of replies to requests sent before it.
	XidAuth int32 = -4
	// XidSetWatches is the xid of SetWatches and SetWatches2 requests
	// and of their replies, which come in request order.
	XidSetWatches int32 = -8
)

// A Code is a ZooKeeper error code (KeeperException.Code), the err field
// of a ReplyHeader, a MultiHeader or an ErrorResponse. CodeOK is success.
type Code int32

// The codes of KeeperException.Code. CodeSystemError and CodeAPIError
// only bound ranges: codes between them are system errors, codes above
// CodeAPIError are API errors. CodeConnectionLoss and CodeRequestTimeout
// are made by clients, never sent by a server.
const (
	CodeOK                           Code = 0
	CodeSystemError                  Code = -1
	CodeRuntimeInconsistency         Code = -2
	CodeDataInconsistency            Code = -3
	CodeConnectionLoss               Code = -4
	CodeMarshallingError             Code = -5
	CodeUnimplemented                Code = -6
	CodeOperationTimeout             Code = -7
	CodeBadArguments                 Code = -8
	CodeUnknownSession               Code = -12
	CodeNewConfigNoQuorum            Code = -13
	CodeReconfigInProgress           Code = -14
	CodeAPIError                     Code = -100
	CodeNoNode                       Code = -101
	CodeNoAuth                       Code = -102
	CodeBadVersion                   Code = -103
	CodeNoChildrenForEphemerals      Code = -108
	CodeNodeExists                   Code = -110
	CodeNotEmpty                     Code = -111
	CodeSessionExpired               Code = -112
	CodeInvalidCallback              Code = -113
	CodeInvalidACL                   Code = -114
	CodeAuthFailed                   Code = -115
	CodeSessionMoved                 Code = -118
	CodeNotReadOnly                  Code = -119
	CodeEphemeralOnLocalSession      Code = -120
	CodeNoWatcher                    Code = -121
	CodeRequestTimeout               Code = -122
	CodeReconfigDisabled             Code = -123
	CodeSessionClosedRequireSASLAuth Code = -124
	CodeQuotaExceeded                Code = -125
	CodeThrottledOp                  Code = -127
)

// codeNames is read only: the names of KeeperException.Code, in the
// Java enum's camel case.
var codeNames = map[Code]string{
	CodeOK:                           "OK",
	CodeSystemError:                  "SystemError",
	CodeRuntimeInconsistency:         "RuntimeInconsistency",
	CodeDataInconsistency:            "DataInconsistency",
	CodeConnectionLoss:               "ConnectionLoss",
	CodeMarshallingError:             "MarshallingError",
	CodeUnimplemented:                "Unimplemented",
	CodeOperationTimeout:             "OperationTimeout",
	CodeBadArguments:                 "BadArguments",
	CodeUnknownSession:               "UnknownSession",
	CodeNewConfigNoQuorum:            "NewConfigNoQuorum",
	CodeReconfigInProgress:           "ReconfigInProgress",
	CodeAPIError:                     "APIError",
	CodeNoNode:                       "NoNode",
	CodeNoAuth:                       "NoAuth",
	CodeBadVersion:                   "BadVersion",
	CodeNoChildrenForEphemerals:      "NoChildrenForEphemerals",
	CodeNodeExists:                   "NodeExists",
	CodeNotEmpty:                     "NotEmpty",
	CodeSessionExpired:               "SessionExpired",
	CodeInvalidCallback:              "InvalidCallback",
	CodeInvalidACL:                   "InvalidACL",
	CodeAuthFailed:                   "AuthFailed",
	CodeSessionMoved:                 "SessionMoved",
	CodeNotReadOnly:                  "NotReadOnly",
	CodeEphemeralOnLocalSession:      "EphemeralOnLocalSession",
	CodeNoWatcher:                    "NoWatcher",
	CodeRequestTimeout:               "RequestTimeout",
	CodeReconfigDisabled:             "ReconfigDisabled",
	CodeSessionClosedRequireSASLAuth: "SessionClosedRequireSaslAuth",
	CodeQuotaExceeded:                "QuotaExceeded",
	CodeThrottledOp:                  "ThrottledOp",
}

// String returns the code's name in KeeperException.Code ("NoNode",
// "BadVersion"), or "Code(n)" for a code it does not know.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// An EventType is the type field of a WatcherEvent
// (Watcher.Event.EventType).
type EventType int32

// The event types of Watcher.Event.EventType. The server sends
// EventNodeCreated to EventNodeChildrenChanged; EventNone marks a change
// of the connection's state, and the "removed" types are made by clients
// when they remove a watch.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// String returns the event type's name in Watcher.Event.EventType
// ("NodeDataChanged"), or "EventType(n)" for one it does not know.
func (e EventType) String() string {
	switch e {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return "EventType(" + strconv.Itoa(int(e)) + ")"
}

// A KeeperState is the state field of a WatcherEvent
// (Watcher.Event.KeeperState). A server's notifications carry
// StateSyncConnected; the other states are the client's own.
type KeeperState int32

// The states of Watcher.Event.KeeperState. StateUnknown and
// StateNoSyncConnected are deprecated and never sent.
const (
	StateUnknown           KeeperState = -1
	StateDisconnected      KeeperState = 0
	StateNoSyncConnected   KeeperState = 1
	StateSyncConnected     KeeperState = 3
	StateAuthFailed        KeeperState = 4
	StateConnectedReadOnly KeeperState = 5
	StateSASLAuthenticated KeeperState = 6
	StateExpired           KeeperState = -112
	StateClosed            KeeperState = 7
)

// String returns the state's name in Watcher.Event.KeeperState
// ("SyncConnected"), or "KeeperState(n)" for one it does not know.
func (s KeeperState) String() string {
	switch s {
	case StateUnknown:
		return "Unknown"
	case StateDisconnected:
		return "Disconnected"
	case StateNoSyncConnected:
		return "NoSyncConnected"
	case StateSyncConnected:
		return "SyncConnected"
	case StateAuthFailed:
		return "AuthFailed"
	case StateConnectedReadOnly:
		return "ConnectedReadOnly"
	case StateSASLAuthenticated:
		return "SaslAuthenticated"
	case StateExpired:
		return "Expired"
	case StateClosed:
		return "Closed"
	}
	return "KeeperState(" + strconv.Itoa(int(s)) + ")"
}

// A CreateMode is the flags field of a CreateRequest (CreateMode.toFlag).
type CreateMode int32

// The modes of CreateMode. The TTL modes need a CreateTTLRequest
// (OpCreateTTL) and a server with extended types enabled; ModeContainer
// goes with OpCreateContainer.
const (
	ModePersistent              CreateMode = 0
	ModeEphemeral               CreateMode = 1
	ModePersistentSequential    CreateMode = 2
	ModeEphemeralSequential     CreateMode = 3
	ModeContainer               CreateMode = 4
	ModePersistentTTL           CreateMode = 5
	ModePersistentSequentialTTL CreateMode = 6
)

// A WatcherType is the type field of a RemoveWatchesRequest or a
// CheckWatchesRequest (Watcher.WatcherType): which of a path's watches
// the request is about.
type WatcherType int32

// The types of Watcher.WatcherType.
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// An AddWatchMode is the mode field of an AddWatchRequest
// (ZooDefs.AddWatchModes).
type AddWatchMode int32

// The modes of ZooDefs.AddWatchModes: a persistent watch fires for its
// node's data and children changes and stays; a recursive one also fires
// for every node below it (data changes, creations and deletions).
const (
	AddWatchPersistent          AddWatchMode = 0
	AddWatchPersistentRecursive AddWatchMode = 1
)

// The permission bits of an ACL (ZooDefs.Perms).
const (
	PermRead   int32 = 1 << 0
	PermWrite  int32 = 1 << 1
	PermCreate int32 = 1 << 2
	PermDelete int32 = 1 << 3
	PermAdmin  int32 = 1 << 4
	PermAll    int32 = PermRead | PermWrite | PermCreate | PermDelete | PermAdmin
)
