// Package zkwire is ZooKeeper's client wire protocol as bytes: the jute
// records a client sends and receives, their binary encoding, and the
// framing of a TCP stream into messages.
//
// It is written from ZooKeeper's own definitions: the records of
// zookeeper-jute's zookeeper.jute (each Go struct names its record and
// keeps its fields in wire order), the constants of ZooDefs.OpCode,
// KeeperException.Code, CreateMode and Watcher, and the Java client's
// documented behaviour (ClientCnxn): special xids, the multi framing of
// MultiOperationRecord and MultiResponse, and the rule that a reply
// carries a body only when its error code is zero.
//
// What it is not: it does no I/O beyond reading one frame from an
// io.Reader, keeps no session, assigns no xids, matches no replies to
// requests and runs no timers. Those belong to the transport above it.
//
// # Encoding
//
// Every record has an Encode method that appends its encoding to a byte
// slice and a Decode method that reads it from a [Decoder]. The encoding
// is jute's binary archive: int as 4 bytes and long as 8 bytes, both
// big-endian; boolean as one byte; ustring and buffer as an int length
// and the bytes, length -1 meaning null; vector as an int count (-1 for
// null) and the elements; a record as its fields one after the other,
// with no tag and no length of its own.
//
// # Decoding
//
// A [Decoder] reads from a byte slice and never panics, whatever the
// bytes: every read is bounds-checked, and a length is refused when it is
// negative (other than -1, null), longer than the bytes that remain, or
// longer than the limit the caller gave. The first failure is kept and
// returned as a [*DecodeError] naming the record, the field and the
// offset. Decoded strings and buffers never alias the input, so a caller
// may reuse its read buffer at once.
//
// # Framing
//
// Each message, in both directions, is an int length (big-endian, not
// counting itself) and the payload. [AppendFrame] and [AppendRequest]
// refuse a frame whose payload exceeds a limit (ZooKeeper's
// jute.maxbuffer, [MaxBuffer], by default) before it is sent, since a
// server closes the connection of a client that sends one; [ReadFrame]
// refuses an incoming length that is negative or over its limit without
// allocating it.
//
// A request is a [RequestHeader] and the operation's record (none for a
// ping or a closeSession); a reply is a [ReplyHeader] and, only when
// ReplyHeader.Err is [CodeOK], the operation's response record
// ([DecodeReplyBody] applies that rule). The connect request and
// response are the exception: they carry no header.
package zkwire
