/* coflowbed leaf-spine pipeline for BMv2 simple_switch_grpc (P4_16, v1model).
 *
 * The same forwarding and marking as the OpenFlow pipeline (controller/southbound/
 * of_messages.py), so both switch kinds feed the same Linux port schedulers:
 *
 *  1. coflow table (leaves; entries only match host-facing ports): key = ingress port,
 *     DSCP tag (1..55, set by the sending host), and the destination IP as an LPM
 *     (/32 for per-pair rules, wildcard for per-host rules).  A hit polices the packet
 *     with an indirect meter (RED -> drop), rewrites the DSCP to the level code
 *     56 + level (workload/marking.py) and counts bytes per rule and per tag.
 *  2. priority: every switch derives standard_metadata.priority from the DSCP (level
 *     code 56+L -> 7-L, DSCP 0 -> 7, any other tag -> 0), because BMv2's queue 7 is
 *     its most urgent while our level 0 is the most urgent.
 *  3. routing: LPM on the IPv4 destination -> port, drop, or the ECMP table, whose
 *     action selector hashes the 5-tuple over the members (one per spine uplink).
 *
 * Port counters (rx at ingress, tx at egress) serve the control API's port_stats.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;
const bit<6>  LEVEL_CODE_BASE = 56;
const bit<6>  TAG_MAX = 55;
const bit<32> METER_CELLS = 8192;
const bit<32> PORT_CELLS = 512;
const bit<32> TAG_CELLS = 64;

typedef bit<9>  port_t;
typedef bit<32> ip4_t;

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    ip4_t   src_addr;
    ip4_t   dst_addr;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    tcp_t      tcp;
    udp_t      udp;
}

struct metadata_t {
    bit<16> l4_src;
    bit<16> l4_dst;
    bit<8>  ecmp_group;
    bit<2>  color;      // meter colour: 0 green (also: not metered), 1 yellow, 2 red
    bit<32> meter_idx;
}

parser CoflowParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // Only first fragments carry L4 ports; options are not parsed (ihl 5 hosts).
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, PROTO_TCP): parse_tcp;
            (0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_tcp {
        pkt.extract(hdr.tcp);
        meta.l4_src = hdr.tcp.src_port;
        meta.l4_dst = hdr.tcp.dst_port;
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        meta.l4_src = hdr.udp.src_port;
        meta.l4_dst = hdr.udp.dst_port;
        transition accept;
    }
}

control CoflowVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control CoflowIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    meter(METER_CELLS, MeterType.bytes) tag_meter;
    counter(METER_CELLS, CounterType.packets_and_bytes) meter_in;
    counter(METER_CELLS, CounterType.packets_and_bytes) meter_drop;
    counter(TAG_CELLS, CounterType.packets_and_bytes) tag_counter;
    counter(PORT_CELLS, CounterType.packets_and_bytes) port_rx;
    direct_counter(CounterType.packets_and_bytes) coflow_counter;

    action drop() {
        mark_to_drop(std);
    }

    action set_level(bit<3> level) {
        tag_counter.count((bit<32>) hdr.ipv4.dscp);
        hdr.ipv4.dscp = LEVEL_CODE_BASE + (bit<6>) level;
    }

    action set_level_metered(bit<3> level, bit<32> meter_idx) {
        tag_counter.count((bit<32>) hdr.ipv4.dscp);
        meter_in.count(meter_idx);
        tag_meter.execute_meter<bit<2>>(meter_idx, meta.color);
        meta.meter_idx = meter_idx;  // RED is dropped in apply (no ifs in BMv2 actions)
        hdr.ipv4.dscp = LEVEL_CODE_BASE + (bit<6>) level;
    }

    table coflow {
        key = {
            std.ingress_port : exact @name("in_port");
            hdr.ipv4.dscp    : exact @name("tag");
            hdr.ipv4.dst_addr: lpm   @name("dst");
        }
        actions = { set_level; set_level_metered; NoAction; }
        default_action = NoAction();
        counters = coflow_counter;
        size = 8192;
    }

    action forward(port_t port) {
        std.egress_spec = port;
    }

    action to_ecmp(bit<8> group) {
        mark_to_drop(std);  // an ECMP miss drops; a hit's forward() overrides this
        meta.ecmp_group = group;
    }

    table route {
        key = { hdr.ipv4.dst_addr: lpm @name("dst"); }
        actions = { forward; to_ecmp; drop; }
        default_action = drop();
        size = 256;
    }

    action_selector(HashAlgorithm.crc16, 32w64, 32w14) ecmp_selector;

    table ecmp {
        key = {
            meta.ecmp_group  : exact    @name("group");
            hdr.ipv4.src_addr: selector @name("src");
            hdr.ipv4.dst_addr: selector @name("dst");
            hdr.ipv4.protocol: selector @name("proto");
            meta.l4_src      : selector @name("l4_src");
            meta.l4_dst      : selector @name("l4_dst");
        }
        actions = { forward; drop; }
        implementation = ecmp_selector;  // (no default action with action profiles)
        size = 16;
    }

    apply {
        port_rx.count((bit<32>) std.ingress_port);
        if (!hdr.ipv4.isValid()) {
            drop();  // hosts use static ARP; nothing but IPv4 crosses the fabric
            return;
        }
        if (hdr.ipv4.dscp != 0 && hdr.ipv4.dscp <= TAG_MAX) {
            coflow.apply();
            // V1MODEL_METER_COLOR_RED = 2: above the peak rate; counted and dropped.
            if (meta.color == 2) {
                meter_drop.count(meta.meter_idx);
                drop();
                return;
            }
        }
        // BMv2 serves queue 7 first; level L is served from queue 7 - L.
        if (hdr.ipv4.dscp >= LEVEL_CODE_BASE) {
            std.priority = 7 - (bit<3>) (hdr.ipv4.dscp - LEVEL_CODE_BASE);
        } else if (hdr.ipv4.dscp == 0) {
            std.priority = 7;
        } else {
            std.priority = 0;
        }
        switch (route.apply().action_run) {
            to_ecmp: { ecmp.apply(); }
        }
    }
}

control CoflowEgress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    counter(PORT_CELLS, CounterType.packets_and_bytes) port_tx;

    apply {
        port_tx.count((bit<32>) std.egress_port);
    }
}

control CoflowComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        // The DSCP rewrite changes the header: recompute its checksum.
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control CoflowDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

V1Switch(CoflowParser(), CoflowVerifyChecksum(), CoflowIngress(), CoflowEgress(),
         CoflowComputeChecksum(), CoflowDeparser()) main;
