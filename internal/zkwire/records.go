package zkwire

// This file holds the records of zookeeper.jute that a client sends or
// receives, each with its fields in wire order. Encode appends a record;
// Decode reads one and returns the Decoder's first failure. Records that
// only the server sends are encoded too, and records that only clients
// send are decoded too, so that tests (and fakes of a server) can use
// both directions.

// Id is jute's org.apache.zookeeper.data.Id: an identity in an ACL
// ("world"/"anyone", "digest"/"user:base64(sha1)", "ip"/"10.0.0.0/8").
type Id struct {
	Scheme string
	ID     string
}

// Encode appends the Id's encoding.
func (r Id) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Scheme)
	return AppendString(dst, r.ID)
}

// Decode reads an Id.
func (r *Id) Decode(d *Decoder) error {
	r.Scheme = d.Ustring("Id", "scheme")
	r.ID = d.Ustring("Id", "id")
	return d.Err()
}

// ACL is jute's org.apache.zookeeper.data.ACL: the permissions
// (PermRead...) that an identity has on a node.
type ACL struct {
	Perms int32
	ID    Id
}

// Encode appends the ACL's encoding.
func (r ACL) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, r.Perms)
	return r.ID.Encode(dst)
}

// Decode reads an ACL.
func (r *ACL) Decode(d *Decoder) error {
	r.Perms = d.Int32("ACL", "perms")
	return r.ID.Decode(d)
}

// appendACLs appends a vector<ACL>; nil is null.
func appendACLs(dst []byte, acl []ACL) []byte {
	if acl == nil {
		return AppendInt32(dst, -1)
	}
	dst = AppendInt32(dst, int32(len(acl)))
	for _, a := range acl {
		dst = a.Encode(dst)
	}
	return dst
}

// decodeACLs reads a vector<ACL>: nil for null, empty non-nil for none.
func decodeACLs(d *Decoder, record string) []ACL {
	n := d.VectorLen(record, "acl", 12) // perms, and two string lengths at least
	if n < 0 {
		return nil
	}
	acl := make([]ACL, n)
	for i := range acl {
		if acl[i].Decode(d) != nil {
			return nil
		}
	}
	return acl
}

// Stat is jute's org.apache.zookeeper.data.Stat: a node's metadata, 68
// bytes on the wire.
type Stat struct {
	Czxid          int64 // the zxid of the node's creation
	Mzxid          int64 // the zxid of the last change of its data
	Ctime          int64 // its creation, in milliseconds since the epoch
	Mtime          int64 // the last change of its data, same unit
	Version        int32 // the number of changes to its data
	Cversion       int32 // the number of changes to its children
	Aversion       int32 // the number of changes to its ACL
	EphemeralOwner int64 // the session that owns it if ephemeral, else 0
	DataLength     int32 // the length of its data
	NumChildren    int32 // the number of its children
	Pzxid          int64 // the zxid of the last change of its children
}

// Encode appends the Stat's encoding.
func (r Stat) Encode(dst []byte) []byte {
	dst = AppendInt64(dst, r.Czxid)
	dst = AppendInt64(dst, r.Mzxid)
	dst = AppendInt64(dst, r.Ctime)
	dst = AppendInt64(dst, r.Mtime)
	dst = AppendInt32(dst, r.Version)
	dst = AppendInt32(dst, r.Cversion)
	dst = AppendInt32(dst, r.Aversion)
	dst = AppendInt64(dst, r.EphemeralOwner)
	dst = AppendInt32(dst, r.DataLength)
	dst = AppendInt32(dst, r.NumChildren)
	return AppendInt64(dst, r.Pzxid)
}

// Decode reads a Stat.
func (r *Stat) Decode(d *Decoder) error {
	r.Czxid = d.Int64("Stat", "czxid")
	r.Mzxid = d.Int64("Stat", "mzxid")
	r.Ctime = d.Int64("Stat", "ctime")
	r.Mtime = d.Int64("Stat", "mtime")
	r.Version = d.Int32("Stat", "version")
	r.Cversion = d.Int32("Stat", "cversion")
	r.Aversion = d.Int32("Stat", "aversion")
	r.EphemeralOwner = d.Int64("Stat", "ephemeralOwner")
	r.DataLength = d.Int32("Stat", "dataLength")
	r.NumChildren = d.Int32("Stat", "numChildren")
	r.Pzxid = d.Int64("Stat", "pzxid")
	return d.Err()
}

// ConnectRequest is jute's ConnectRequest, the first message on a
// connection, sent with no RequestHeader. A new session sends
// SessionID 0, LastZxidSeen 0 and a 16-byte zero Passwd; a session that
// reconnects sends its id, password and the last zxid it has seen.
// TimeOut is the requested session timeout in milliseconds.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool // whether a read-only server may take the session
}

// Encode appends the ConnectRequest's encoding, with its readOnly byte.
func (r ConnectRequest) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, r.ProtocolVersion)
	dst = AppendInt64(dst, r.LastZxidSeen)
	dst = AppendInt32(dst, r.TimeOut)
	dst = AppendInt64(dst, r.SessionID)
	dst = AppendBuffer(dst, r.Passwd)
	return AppendBool(dst, r.ReadOnly)
}

// Decode reads a ConnectRequest from a frame's whole payload. As
// ZooKeeper's server does, it accepts the payload without the trailing
// readOnly byte (clients up to 3.3 did not send it): ReadOnly is then
// false.
func (r *ConnectRequest) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int32("ConnectRequest", "protocolVersion")
	r.LastZxidSeen = d.Int64("ConnectRequest", "lastZxidSeen")
	r.TimeOut = d.Int32("ConnectRequest", "timeOut")
	r.SessionID = d.Int64("ConnectRequest", "sessionId")
	r.Passwd = d.Buffer("ConnectRequest", "passwd")
	r.ReadOnly = d.Len() > 0 && d.Bool("ConnectRequest", "readOnly")
	return d.Err()
}

// ConnectResponse is jute's ConnectResponse, the server's answer to a
// ConnectRequest, with no ReplyHeader. TimeOut is the negotiated session
// timeout in milliseconds; TimeOut <= 0 (with SessionID 0) means the
// session asked for has expired or its password was wrong. ReadOnly is
// true when the server is read-only.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
}

// Encode appends the ConnectResponse's encoding, with its readOnly byte.
func (r ConnectResponse) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, r.ProtocolVersion)
	dst = AppendInt32(dst, r.TimeOut)
	dst = AppendInt64(dst, r.SessionID)
	dst = AppendBuffer(dst, r.Passwd)
	return AppendBool(dst, r.ReadOnly)
}

// Decode reads a ConnectResponse from a frame's whole payload. As the
// Java client does, it accepts the payload without the trailing readOnly
// byte (servers up to 3.3, or any server answering a client that did not
// send the byte): ReadOnly is then false.
func (r *ConnectResponse) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int32("ConnectResponse", "protocolVersion")
	r.TimeOut = d.Int32("ConnectResponse", "timeOut")
	r.SessionID = d.Int64("ConnectResponse", "sessionId")
	r.Passwd = d.Buffer("ConnectResponse", "passwd")
	r.ReadOnly = d.Len() > 0 && d.Bool("ConnectResponse", "readOnly")
	return d.Err()
}

// RequestHeader is jute's RequestHeader, which starts every request but
// the ConnectRequest: Xid is the client's number for the request (positive,
// or one of the special xids XidPing, XidAuth, XidSetWatches), Type its
// operation.
type RequestHeader struct {
	Xid  int32
	Type OpCode
}

// Encode appends the RequestHeader's encoding.
func (r RequestHeader) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, r.Xid)
	return AppendInt32(dst, int32(r.Type))
}

// Decode reads a RequestHeader.
func (r *RequestHeader) Decode(d *Decoder) error {
	r.Xid = d.Int32("RequestHeader", "xid")
	r.Type = OpCode(d.Int32("RequestHeader", "type"))
	return d.Err()
}

// ReplyHeader is jute's ReplyHeader, which starts every message from the
// server but the ConnectResponse. Xid is the request's xid (or
// XidNotification for a watch event); Zxid is the server's last
// processed zxid (-1 in notifications from servers up to 3.8, the
// triggering change's zxid since 3.9); Err is the request's result. The
// response record follows only when Err is CodeOK: see DecodeReplyBody.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

// Encode appends the ReplyHeader's encoding.
func (r ReplyHeader) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, r.Xid)
	dst = AppendInt64(dst, r.Zxid)
	return AppendInt32(dst, int32(r.Err))
}

// Decode reads a ReplyHeader.
func (r *ReplyHeader) Decode(d *Decoder) error {
	r.Xid = d.Int32("ReplyHeader", "xid")
	r.Zxid = d.Int64("ReplyHeader", "zxid")
	r.Err = Code(d.Int32("ReplyHeader", "err"))
	return d.Err()
}

// WatcherEvent is jute's WatcherEvent: the body of a notification (a
// ReplyHeader with XidNotification), telling that a watch on Path fired.
type WatcherEvent struct {
	Type  EventType
	State KeeperState
	Path  string
}

// Encode appends the WatcherEvent's encoding.
func (r WatcherEvent) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, int32(r.Type))
	dst = AppendInt32(dst, int32(r.State))
	return AppendString(dst, r.Path)
}

// Decode reads a WatcherEvent.
func (r *WatcherEvent) Decode(d *Decoder) error {
	r.Type = EventType(d.Int32("WatcherEvent", "type"))
	r.State = KeeperState(d.Int32("WatcherEvent", "state"))
	r.Path = d.Ustring("WatcherEvent", "path")
	return d.Err()
}

// AuthPacket is jute's AuthPacket, the body of an OpAuth request, sent
// with XidAuth: credentials for Scheme ("digest" with "user:password").
// Type is 0, as the Java client sends.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode appends the AuthPacket's encoding.
func (r AuthPacket) Encode(dst []byte) []byte {
	dst = AppendInt32(dst, r.Type)
	dst = AppendString(dst, r.Scheme)
	return AppendBuffer(dst, r.Auth)
}

// Decode reads an AuthPacket.
func (r *AuthPacket) Decode(d *Decoder) error {
	r.Type = d.Int32("AuthPacket", "type")
	r.Scheme = d.Ustring("AuthPacket", "scheme")
	r.Auth = d.Buffer("AuthPacket", "auth")
	return d.Err()
}

// CreateRequest is jute's CreateRequest, the body of OpCreate (answered
// by a CreateResponse), OpCreate2 and OpCreateContainer (answered by a
// Create2Response). Flags is the node's mode; ModeContainer goes with
// OpCreateContainer.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
}

// Encode appends the CreateRequest's encoding.
func (r CreateRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	dst = appendACLs(dst, r.ACL)
	return AppendInt32(dst, int32(r.Flags))
}

// Decode reads a CreateRequest.
func (r *CreateRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("CreateRequest", "path")
	r.Data = d.Buffer("CreateRequest", "data")
	r.ACL = decodeACLs(d, "CreateRequest")
	r.Flags = CreateMode(d.Int32("CreateRequest", "flags"))
	return d.Err()
}

// CreateTTLRequest is jute's CreateTTLRequest, the body of OpCreateTTL
// (answered by a Create2Response): a CreateRequest whose node, with
// ModePersistentTTL or ModePersistentSequentialTTL, is deleted once it
// has had no child for TTL milliseconds.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
	TTL   int64
}

// Encode appends the CreateTTLRequest's encoding.
func (r CreateTTLRequest) Encode(dst []byte) []byte {
	dst = CreateRequest{r.Path, r.Data, r.ACL, r.Flags}.Encode(dst)
	return AppendInt64(dst, r.TTL)
}

// Decode reads a CreateTTLRequest.
func (r *CreateTTLRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("CreateTTLRequest", "path")
	r.Data = d.Buffer("CreateTTLRequest", "data")
	r.ACL = decodeACLs(d, "CreateTTLRequest")
	r.Flags = CreateMode(d.Int32("CreateTTLRequest", "flags"))
	r.TTL = d.Int64("CreateTTLRequest", "ttl")
	return d.Err()
}

// CreateResponse is jute's CreateResponse, the answer to OpCreate: the
// created node's path (with its sequence number, if sequential).
type CreateResponse struct {
	Path string
}

// Encode appends the CreateResponse's encoding.
func (r CreateResponse) Encode(dst []byte) []byte { return AppendString(dst, r.Path) }

// Decode reads a CreateResponse.
func (r *CreateResponse) Decode(d *Decoder) error {
	r.Path = d.Ustring("CreateResponse", "path")
	return d.Err()
}

// Create2Response is jute's Create2Response, the answer to OpCreate2,
// OpCreateContainer and OpCreateTTL: the created node's path and Stat.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode appends the Create2Response's encoding.
func (r Create2Response) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return r.Stat.Encode(dst)
}

// Decode reads a Create2Response.
func (r *Create2Response) Decode(d *Decoder) error {
	r.Path = d.Ustring("Create2Response", "path")
	return r.Stat.Decode(d)
}

// DeleteRequest is jute's DeleteRequest, the body of OpDelete (answered
// with no body). Version -1 matches any version.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode appends the DeleteRequest's encoding.
func (r DeleteRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt32(dst, r.Version)
}

// Decode reads a DeleteRequest.
func (r *DeleteRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("DeleteRequest", "path")
	r.Version = d.Int32("DeleteRequest", "version")
	return d.Err()
}

// CheckVersionRequest is jute's CheckVersionRequest, the body of OpCheck
// inside a multi: the transaction fails with CodeBadVersion unless the
// node's version is Version (-1 matches any), and with CodeNoNode if it
// is missing.
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode appends the CheckVersionRequest's encoding.
func (r CheckVersionRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt32(dst, r.Version)
}

// Decode reads a CheckVersionRequest.
func (r *CheckVersionRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("CheckVersionRequest", "path")
	r.Version = d.Int32("CheckVersionRequest", "version")
	return d.Err()
}

// ExistsRequest is jute's ExistsRequest, the body of OpExists (answered
// by an ExistsResponse, or CodeNoNode). With Watch, the server sets a
// watch on Path even when the node is missing: it fires when the node is
// created, changed or deleted.
type ExistsRequest struct {
	Path  string
	Watch bool
}

// Encode appends the ExistsRequest's encoding.
func (r ExistsRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendBool(dst, r.Watch)
}

// Decode reads an ExistsRequest.
func (r *ExistsRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("ExistsRequest", "path")
	r.Watch = d.Bool("ExistsRequest", "watch")
	return d.Err()
}

// ExistsResponse is jute's ExistsResponse, the answer to OpExists: the
// node's Stat.
type ExistsResponse struct {
	Stat Stat
}

// Encode appends the ExistsResponse's encoding.
func (r ExistsResponse) Encode(dst []byte) []byte { return r.Stat.Encode(dst) }

// Decode reads an ExistsResponse.
func (r *ExistsResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetDataRequest is jute's GetDataRequest, the body of OpGetData
// (answered by a GetDataResponse, or CodeNoNode). With Watch, and only if
// the node exists, the server sets a data watch on Path: it fires when
// the node's data changes or the node is deleted.
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode appends the GetDataRequest's encoding.
func (r GetDataRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendBool(dst, r.Watch)
}

// Decode reads a GetDataRequest.
func (r *GetDataRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("GetDataRequest", "path")
	r.Watch = d.Bool("GetDataRequest", "watch")
	return d.Err()
}

// GetDataResponse is jute's GetDataResponse, the answer to OpGetData:
// the node's data (nil if it was created with null data) and Stat.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode appends the GetDataResponse's encoding.
func (r GetDataResponse) Encode(dst []byte) []byte {
	dst = AppendBuffer(dst, r.Data)
	return r.Stat.Encode(dst)
}

// Decode reads a GetDataResponse.
func (r *GetDataResponse) Decode(d *Decoder) error {
	r.Data = d.Buffer("GetDataResponse", "data")
	return r.Stat.Decode(d)
}

// SetDataRequest is jute's SetDataRequest, the body of OpSetData
// (answered by a SetDataResponse). Version -1 matches any version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode appends the SetDataRequest's encoding.
func (r SetDataRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	dst = AppendBuffer(dst, r.Data)
	return AppendInt32(dst, r.Version)
}

// Decode reads a SetDataRequest.
func (r *SetDataRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("SetDataRequest", "path")
	r.Data = d.Buffer("SetDataRequest", "data")
	r.Version = d.Int32("SetDataRequest", "version")
	return d.Err()
}

// SetDataResponse is jute's SetDataResponse, the answer to OpSetData:
// the node's Stat after the change.
type SetDataResponse struct {
	Stat Stat
}

// Encode appends the SetDataResponse's encoding.
func (r SetDataResponse) Encode(dst []byte) []byte { return r.Stat.Encode(dst) }

// Decode reads a SetDataResponse.
func (r *SetDataResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetChildrenRequest is jute's GetChildrenRequest, the body of
// OpGetChildren (answered by a GetChildrenResponse, or CodeNoNode). With
// Watch, and only if the node exists, the server sets a child watch on
// Path: it fires when a child is created or deleted, or the node is
// deleted.
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode appends the GetChildrenRequest's encoding.
func (r GetChildrenRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendBool(dst, r.Watch)
}

// Decode reads a GetChildrenRequest.
func (r *GetChildrenRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("GetChildrenRequest", "path")
	r.Watch = d.Bool("GetChildrenRequest", "watch")
	return d.Err()
}

// GetChildrenResponse is jute's GetChildrenResponse, the answer to
// OpGetChildren: the children's names, in no particular order.
type GetChildrenResponse struct {
	Children []string
}

// Encode appends the GetChildrenResponse's encoding.
func (r GetChildrenResponse) Encode(dst []byte) []byte { return AppendStrings(dst, r.Children) }

// Decode reads a GetChildrenResponse; the names share one allocation
// (see Decoder.Ustrings).
func (r *GetChildrenResponse) Decode(d *Decoder) error {
	r.Children = d.Ustrings("GetChildrenResponse", "children")
	return d.Err()
}

// GetChildren2Request is jute's GetChildren2Request, the body of
// OpGetChildren2 (answered by a GetChildren2Response, or CodeNoNode).
// Watch is as in GetChildrenRequest.
type GetChildren2Request struct {
	Path  string
	Watch bool
}

// Encode appends the GetChildren2Request's encoding.
func (r GetChildren2Request) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendBool(dst, r.Watch)
}

// Decode reads a GetChildren2Request.
func (r *GetChildren2Request) Decode(d *Decoder) error {
	r.Path = d.Ustring("GetChildren2Request", "path")
	r.Watch = d.Bool("GetChildren2Request", "watch")
	return d.Err()
}

// GetChildren2Response is jute's GetChildren2Response, the answer to
// OpGetChildren2: the children's names, in no particular order, and the
// parent's Stat.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode appends the GetChildren2Response's encoding.
func (r GetChildren2Response) Encode(dst []byte) []byte {
	dst = AppendStrings(dst, r.Children)
	return r.Stat.Encode(dst)
}

// Decode reads a GetChildren2Response; the names share one allocation
// (see Decoder.Ustrings).
func (r *GetChildren2Response) Decode(d *Decoder) error {
	r.Children = d.Ustrings("GetChildren2Response", "children")
	return r.Stat.Decode(d)
}

// SyncRequest is jute's SyncRequest, the body of OpSync (answered by a
// SyncResponse): the server the session is connected to catches up with
// the leader before it answers this and later requests.
type SyncRequest struct {
	Path string
}

// Encode appends the SyncRequest's encoding.
func (r SyncRequest) Encode(dst []byte) []byte { return AppendString(dst, r.Path) }

// Decode reads a SyncRequest.
func (r *SyncRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("SyncRequest", "path")
	return d.Err()
}

// SyncResponse is jute's SyncResponse, the answer to OpSync: the path of
// the request.
type SyncResponse struct {
	Path string
}

// Encode appends the SyncResponse's encoding.
func (r SyncResponse) Encode(dst []byte) []byte { return AppendString(dst, r.Path) }

// Decode reads a SyncResponse.
func (r *SyncResponse) Decode(d *Decoder) error {
	r.Path = d.Ustring("SyncResponse", "path")
	return d.Err()
}

// SetWatches is jute's SetWatches, the body of OpSetWatches, sent with
// XidSetWatches after a reconnect (answered with no body): it sets the
// session's watches again on the new connection. For each path the
// server fires at once the events missed since RelativeZxid (the last
// zxid the session saw in a reply) and re-arms the rest.
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode appends the SetWatches' encoding. A nil list is sent empty, not
// null: the server walks every list without a null check.
func (r SetWatches) Encode(dst []byte) []byte {
	dst = AppendInt64(dst, r.RelativeZxid)
	dst = AppendStrings(dst, nonNil(r.DataWatches))
	dst = AppendStrings(dst, nonNil(r.ExistWatches))
	return AppendStrings(dst, nonNil(r.ChildWatches))
}

// Decode reads a SetWatches.
func (r *SetWatches) Decode(d *Decoder) error {
	r.RelativeZxid = d.Int64("SetWatches", "relativeZxid")
	r.DataWatches = d.Ustrings("SetWatches", "dataWatches")
	r.ExistWatches = d.Ustrings("SetWatches", "existWatches")
	r.ChildWatches = d.Ustrings("SetWatches", "childWatches")
	return d.Err()
}

// SetWatches2 is jute's SetWatches2, the body of OpSetWatches2 (servers
// 3.6 and later): a SetWatches that also sets persistent and persistent
// recursive watches (AddWatchRequest) again, without catch-up events for
// those.
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode appends the SetWatches2's encoding. A nil list is sent empty,
// as in SetWatches.
func (r SetWatches2) Encode(dst []byte) []byte {
	dst = SetWatches{r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches}.Encode(dst)
	dst = AppendStrings(dst, nonNil(r.PersistentWatches))
	return AppendStrings(dst, nonNil(r.PersistentRecursiveWatches))
}

// Decode reads a SetWatches2.
func (r *SetWatches2) Decode(d *Decoder) error {
	r.RelativeZxid = d.Int64("SetWatches2", "relativeZxid")
	r.DataWatches = d.Ustrings("SetWatches2", "dataWatches")
	r.ExistWatches = d.Ustrings("SetWatches2", "existWatches")
	r.ChildWatches = d.Ustrings("SetWatches2", "childWatches")
	r.PersistentWatches = d.Ustrings("SetWatches2", "persistentWatches")
	r.PersistentRecursiveWatches = d.Ustrings("SetWatches2", "persistentRecursiveWatches")
	return d.Err()
}

// nonNil returns v, or an empty list for nil.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// AddWatchRequest is jute's AddWatchRequest, the body of OpAddWatch
// (servers 3.6 and later; answered by an ErrorResponse with CodeOK): a
// watch on Path that stays after it fires.
type AddWatchRequest struct {
	Path string
	Mode AddWatchMode
}

// Encode appends the AddWatchRequest's encoding.
func (r AddWatchRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt32(dst, int32(r.Mode))
}

// Decode reads an AddWatchRequest.
func (r *AddWatchRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("AddWatchRequest", "path")
	r.Mode = AddWatchMode(d.Int32("AddWatchRequest", "mode"))
	return d.Err()
}

// RemoveWatchesRequest is jute's RemoveWatchesRequest, the body of
// OpRemoveWatches (servers 3.5 and later; answered with no body, or
// CodeNoWatcher): it removes the session's watches of Type on Path.
type RemoveWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode appends the RemoveWatchesRequest's encoding.
func (r RemoveWatchesRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt32(dst, int32(r.Type))
}

// Decode reads a RemoveWatchesRequest.
func (r *RemoveWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("RemoveWatchesRequest", "path")
	r.Type = WatcherType(d.Int32("RemoveWatchesRequest", "type"))
	return d.Err()
}

// CheckWatchesRequest is jute's CheckWatchesRequest, the body of
// OpCheckWatches (servers 3.5 and later; answered with no body, or
// CodeNoWatcher): it asks whether the session has a watch of Type on
// Path, and removes none.
type CheckWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode appends the CheckWatchesRequest's encoding.
func (r CheckWatchesRequest) Encode(dst []byte) []byte {
	dst = AppendString(dst, r.Path)
	return AppendInt32(dst, int32(r.Type))
}

// Decode reads a CheckWatchesRequest.
func (r *CheckWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.Ustring("CheckWatchesRequest", "path")
	r.Type = WatcherType(d.Int32("CheckWatchesRequest", "type"))
	return d.Err()
}

// ErrorResponse is jute's ErrorResponse: the answer to OpAddWatch (with
// CodeOK), and a failed operation's result inside a multi response.
type ErrorResponse struct {
	Err Code
}

// Encode appends the ErrorResponse's encoding.
func (r ErrorResponse) Encode(dst []byte) []byte { return AppendInt32(dst, int32(r.Err)) }

// Decode reads an ErrorResponse.
func (r *ErrorResponse) Decode(d *Decoder) error {
	r.Err = Code(d.Int32("ErrorResponse", "err"))
	return d.Err()
}
