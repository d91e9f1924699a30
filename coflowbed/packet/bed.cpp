// coflowbed's packet-level fabric on ns-3, compiled at run time through cppyy
// (coflowbed/packet/ns3bed.py).  A leaf-spine of point-to-point links (a single switch
// when spines == 0), an 8-band strict-priority PrioQueueDisc on every egress whose band
// is the packet's DSCP level code (56 + level; untagged traffic, e.g. ACKs, in band 0),
// per-flow ECMP by address planes (every host holds one address per spine, 10.p.leaf.k;
// a flow connects between the plane-p addresses of its hosts and so crosses spine p both
// ways), and TCP bulk flows that Python starts, re-marks and paces.  A flow's last byte
// at its receiver stops the simulator so that Python can decide at that instant.
#include <algorithm>
#include <map>
#include <vector>

namespace coflowbed_packet {
using namespace ns3;

// Band of a packet: its DSCP level code (56 + level), else 0 (untagged: ACKs, control).
class DscpBandFilter : public Ipv4PacketFilter {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("ns3::CoflowbedDscpBandFilter")
                            .SetParent<Ipv4PacketFilter>()
                            .SetGroupName("TrafficControl")
                            .AddConstructor<DscpBandFilter>();
    return tid;
  }

 private:
  int32_t DoClassify(Ptr<QueueDiscItem> item) const override {
    Ptr<Ipv4QueueDiscItem> ip = DynamicCast<Ipv4QueueDiscItem>(item);
    uint8_t dscp = ip->GetHeader().GetTos() >> 2;
    return dscp >= 56 ? dscp - 56 : 0;
  }
};

// TCP's retransmission timer backs off to 60 s in ns-3 (hard-coded): a flow strict
// priority starved for a while then idles on a free link until its next timeout.  The
// emulator's hosts cap the back-off at 1 s (topo/hosttcp.py, tcp_rto_max_ms); so does
// this, through the protected members a derived class may name.
struct RtoCap : public TcpSocketBase {
  static void Apply(TcpSocketBase* s, Time cap) {
    TracedValue<Time>& rto = s->*(&RtoCap::m_rto);
    if (rto.Get() <= cap) return;
    rto = cap;
    EventId& ev = s->*(&RtoCap::m_retxEvent);
    if (ev.IsPending() && Simulator::GetDelayLeft(ev) > cap) {
      ev.Cancel();
      ev = Simulator::Schedule(cap, &RtoCap::ReTxTimeout, s);
    }
  }
};

struct Flow {
  uint32_t src = 0, dst = 0, plane = 0;
  uint16_t port = 0;
  uint64_t bytes = 0, handed = 0, received = 0;
  uint8_t tos = 0;
  double rateBps = 0, paceT0 = 0;  // rate cap (0: none) and when it was set
  uint64_t paceBase = 0;           // bytes handed when the cap was set
  double start = -1, finish = -1, firstRx = -1;
  uint64_t retransmitted = 0;  // bytes the sender's TCP sent again
  Ptr<Socket> tx, listen;
  EventId pace;
};

class Bed {
 public:
  std::vector<Flow> flows;
  std::vector<uint32_t> done;  // flows finished since the last TakeDone
  uint64_t drops[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t marks[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // CE marks (DCTCP)
  uint64_t retransmits = 0;

  // How every port serves a band (before Build): ``buckets`` > 0, round robin over that
  // many hash buckets of flows, as the emulator's ports do (topo/qos.py: 16 buckets per
  // level at every host NIC and switch port, and TCP small queues in the hosts); 0, one
  // FIFO.  DCTCP's marking queues stay FIFOs.
  void SetFairQueue(uint32_t buckets) { m_buckets = buckets; }

  // The fabric: hosts listed leaf by leaf, ``perLeaf`` each; rates in bit/s; switch
  // ports hold ``queuePackets`` per band, host NICs ``hostQueuePackets``.
  void Build(uint32_t nHosts, uint32_t perLeaf, uint32_t nSpines, double hostBps,
             double fabricBps, double delayS, uint32_t queuePackets, uint32_t hostQueuePackets,
             bool ecn, uint32_t ecnPackets, uint32_t mtu) {
    m_perLeaf = perLeaf;
    m_ecn = ecn;
    m_ecnPackets = ecnPackets;
    m_mtu = mtu;
    m_delay = delayS;
    m_planes = std::max<uint32_t>(nSpines, 1);
    uint32_t nLeaves = nHosts / perLeaf;
    m_hosts.Create(nHosts);
    NodeContainer leaves, spines;
    leaves.Create(nLeaves);
    spines.Create(nSpines);
    Ipv4StaticRoutingHelper staticRouting;
    InternetStackHelper stack;
    stack.SetRoutingHelper(staticRouting);
    stack.Install(m_hosts);
    stack.Install(leaves);
    stack.Install(spines);
    Ipv4AddressHelper links("100.64.0.0", "255.255.255.252");
    for (uint32_t h = 0; h < nHosts; ++h) {
      uint32_t leaf = h / perLeaf;
      Ipv4InterfaceContainer ifs =
          Link(m_hosts.Get(h), leaves.Get(leaf), hostBps, hostQueuePackets, queuePackets, links);
      Ptr<Ipv4> hip = m_hosts.Get(h)->GetObject<Ipv4>();
      for (uint32_t p = 0; p < m_planes; ++p)
        // A /16 per plane: ns-3 picks the source address in the destination's plane,
        // so a flow's ACKs come back over its own spine.
        hip->AddAddress(1, Ipv4InterfaceAddress(PlaneAddress(h, p), Ipv4Mask("255.255.0.0")));
      staticRouting.GetStaticRouting(hip)->SetDefaultRoute(ifs.GetAddress(1), 1);
      Ptr<Ipv4StaticRouting> lr = staticRouting.GetStaticRouting(leaves.Get(leaf)->GetObject<Ipv4>());
      uint32_t lif = leaves.Get(leaf)->GetObject<Ipv4>()->GetNInterfaces() - 1;
      for (uint32_t p = 0; p < m_planes; ++p) lr->AddHostRouteTo(PlaneAddress(h, p), lif);
    }
    for (uint32_t l = 0; l < nLeaves; ++l) {
      for (uint32_t s = 0; s < nSpines; ++s) {
        Link(leaves.Get(l), spines.Get(s), fabricBps, queuePackets, queuePackets, links);
        Ptr<Ipv4> lip = leaves.Get(l)->GetObject<Ipv4>();
        Ptr<Ipv4> sip = spines.Get(s)->GetObject<Ipv4>();
        staticRouting.GetStaticRouting(lip)->AddNetworkRouteTo(
            Ipv4Address((10u << 24) | (s << 16)), Ipv4Mask("255.255.0.0"), lip->GetNInterfaces() - 1);
        staticRouting.GetStaticRouting(sip)->AddNetworkRouteTo(
            Ipv4Address((10u << 24) | (s << 16) | (l << 8)), Ipv4Mask("255.255.255.0"),
            sip->GetNInterfaces() - 1);
      }
    }
    for (uint32_t i = 0; i < m_hosts.GetN(); ++i) m_nextPort.push_back(10000);
    RunUntil(0);  // nodes and queue discs initialise at t = 0, before any flow may send
  }

  // A new flow (not started): its index.
  uint32_t AddFlow(uint32_t src, uint32_t dst, uint32_t plane, uint64_t bytes, uint32_t level) {
    Flow f;
    f.src = src;
    f.dst = dst;
    f.plane = plane % m_planes;
    f.bytes = bytes;
    f.tos = Tos(level);
    f.port = m_nextPort[dst]++;
    flows.push_back(f);
    return flows.size() - 1;
  }

  // Open flow i's connection now: a listener at its receiver, a sender at its source.
  void StartFlow(uint32_t i) {
    Flow& f = flows[i];
    f.start = Simulator::Now().GetSeconds();
    f.paceT0 = f.start;
    f.listen = Socket::CreateSocket(m_hosts.Get(f.dst), TcpSocketFactory::GetTypeId());
    if (m_ecn) DynamicCast<TcpSocketBase>(f.listen)->SetUseEcn(TcpSocketState::On);
    f.listen->Bind(InetSocketAddress(PlaneAddress(f.dst, f.plane), f.port));
    f.listen->Listen();
    f.listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                MakeCallback(&Bed::Accepted, this));
    m_byPort[Key(f.dst, f.port)] = i;
    f.tx = Socket::CreateSocket(m_hosts.Get(f.src), TcpSocketFactory::GetTypeId());
    if (m_ecn) DynamicCast<TcpSocketBase>(f.tx)->SetUseEcn(TcpSocketState::On);
    f.tx->Bind(InetSocketAddress(PlaneAddress(f.src, f.plane), 0));
    f.tx->TraceConnectWithoutContext("Tx", MakeCallback(&Bed::Marking, this));
    f.tx->SetConnectCallback(MakeCallback(&Bed::Connected, this),
                             MakeCallback(&Bed::Failed, this));
    f.tx->SetSendCallback(MakeCallback(&Bed::Space, this));
    f.tx->TraceConnectWithoutContext("Retransmission", MakeCallback(&Bed::Retransmitted, this));
    m_bySocket[PeekPointer(f.tx)] = i;
    m_live.push_back(i);
    if (m_rtoCap > 0 && !m_capEvent.IsPending())
      m_capEvent = Simulator::Schedule(Seconds(m_rtoCap / 4), &Bed::CapRtos, this);
    f.tx->Connect(InetSocketAddress(PlaneAddress(f.dst, f.plane), f.port));
  }

  // Re-mark flow i's packets from now on with ``level``'s code.
  void SetLevel(uint32_t i, uint32_t level) {
    Flow& f = flows[i];
    f.tos = Tos(level);
  }

  // Pace flow i at ``bps`` from now (0: as fast as TCP goes).
  void SetRate(uint32_t i, double bps) {
    Flow& f = flows[i];
    f.rateBps = bps;
    f.paceT0 = Simulator::Now().GetSeconds();
    f.paceBase = f.handed;
    if (f.tx && f.finish < 0) Fill(i);
  }

  // Cap every running sender's retransmission timeout at ``s`` seconds (0: no cap).
  void SetRtoCap(double s) { m_rtoCap = s; }

  // Run until ``t`` (seconds) or until a flow finishes, whichever comes first.
  void RunUntil(double t) {
    m_wake.Cancel();
    double dt = std::max(0.0, t - Simulator::Now().GetSeconds());
    m_wake = Simulator::Schedule(Seconds(dt), &Simulator::Stop);
    Simulator::Run();
  }

  std::vector<uint32_t> TakeDone() {
    std::vector<uint32_t> out;
    out.swap(done);
    return out;
  }

  // Per band: packets every egress queue dropped (and marked CE) so far.
  void CountDrops() {
    for (uint32_t b = 0; b < 8; ++b) drops[b] = marks[b] = 0;
    for (auto& q : m_prios) {
      for (uint32_t b = 0; b < q->GetNQueueDiscClasses() && b < 8; ++b) {
        const QueueDisc::Stats& st = q->GetQueueDiscClass(b)->GetQueueDisc()->GetStats();
        drops[b] += st.nTotalDroppedPackets;
        marks[b] += st.nTotalMarkedPackets;
      }
    }
  }

 private:
  NodeContainer m_hosts;
  uint32_t m_perLeaf = 1, m_planes = 1;
  bool m_ecn = false;  // ECN-capable TCP (DCTCP) and marking queues
  uint32_t m_ecnPackets = 20, m_mtu = 1500;
  double m_delay = 0;
  std::vector<uint16_t> m_nextPort;
  std::map<uint64_t, uint32_t> m_byPort;  // (receiver, port) -> flow
  std::map<Socket*, uint32_t> m_bySocket;  // sender or accepted socket -> flow
  std::vector<Ptr<QueueDisc>> m_prios;
  uint32_t m_buckets = 0;
  EventId m_wake, m_capEvent;
  double m_rtoCap = 0;
  std::vector<uint32_t> m_live;  // flows started and not finished (pruned lazily)

  // Every quarter of the cap: bring the senders' backed-off timers down to it.
  void CapRtos() {
    std::vector<uint32_t> live;
    for (uint32_t i : m_live) {
      if (flows[i].finish >= 0) continue;
      live.push_back(i);
      RtoCap::Apply(PeekPointer(DynamicCast<TcpSocketBase>(flows[i].tx)), Seconds(m_rtoCap));
    }
    m_live.swap(live);
    if (!m_live.empty())
      m_capEvent = Simulator::Schedule(Seconds(m_rtoCap / 4), &Bed::CapRtos, this);
  }

  // The TOS byte of a level: its DSCP code (ECN bits left to TCP).
  static uint8_t Tos(uint32_t level) { return (56 + level) << 2; }

  // Every segment a flow's sender hands to IP gets the flow's DSCP now, ECN bits as TCP
  // set them.  (Not Socket::SetIpTos: ns-3's TCP then never sends ECT, so no DCTCP.)
  // The handshake's SYN stays unmarked (band 0, as the ACKs): a flow's connection opens
  // at once, as the emulator's pooled connections are open before the flow, instead of
  // its SYN starving behind more urgent bands until the handshake gives up.
  void Marking(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
    if (h.GetFlags() & TcpHeader::SYN) return;
    auto it = m_bySocket.find(const_cast<Socket*>(static_cast<const Socket*>(PeekPointer(s))));
    if (it == m_bySocket.end()) return;
    SocketIpTosTag tag;
    uint8_t ecn = p->PeekPacketTag(tag) ? (tag.GetTos() & 3) : 0;
    tag.SetTos(flows[it->second].tos | ecn);
    const_cast<Packet*>(PeekPointer(p))->ReplacePacketTag(tag);
  }

  static uint64_t Key(uint32_t host, uint16_t port) { return (uint64_t(host) << 16) | port; }

  Ipv4Address PlaneAddress(uint32_t h, uint32_t p) const {
    uint32_t leaf = h / m_perLeaf, k = h % m_perLeaf;
    return Ipv4Address((10u << 24) | (p << 16) | (leaf << 8) | (k + 1));
  }

  // A point-to-point link a<->b with a priority queue on each egress (``qa`` and ``qb``
  // packets per band).
  Ipv4InterfaceContainer Link(Ptr<Node> a, Ptr<Node> b, double bps, uint32_t qa, uint32_t qb,
                              Ipv4AddressHelper& addresses) {
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(bps))));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(m_mtu));
    p2p.SetChannelAttribute("Delay", TimeValue(Seconds(m_delay)));
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer devs = p2p.Install(a, b);
    Prio(devs.Get(0), qa, bps);
    Prio(devs.Get(1), qb, bps);
    Ipv4InterfaceContainer ifs = addresses.Assign(devs);
    addresses.NewNetwork();
    return ifs;
  }

  // The 8-band strict-priority queue of one egress, bands chosen by DSCP; each band a
  // FIFO of ``packets`` (or, with SetFairQueue, round robin over buckets of flows holding
  // ``packets`` in all), or under DCTCP a RED queue in step-marking mode (CE above K).
  void Prio(Ptr<NetDevice> dev, uint32_t packets, double bps) {
    TrafficControlHelper tch;
    uint16_t root = tch.SetRootQueueDisc("ns3::PrioQueueDisc", "Priomap",
                                         StringValue("0 1 2 3 4 5 6 7 0 0 0 0 0 0 0 0"));
    TrafficControlHelper::ClassIdList classes = tch.AddQueueDiscClasses(root, 8, "ns3::QueueDiscClass");
    std::string size = std::to_string(packets) + "p";
    for (uint16_t c : classes) {
      if (m_ecn) {
        tch.AddChildQueueDisc(root, c, "ns3::RedQueueDisc", "MaxSize", StringValue(size),
                              "UseEcn", BooleanValue(true), "UseHardDrop", BooleanValue(false),
                              "MeanPktSize", UintegerValue(m_mtu), "QW", DoubleValue(1.0),
                              "MinTh", DoubleValue(m_ecnPackets), "MaxTh", DoubleValue(m_ecnPackets + 1),
                              "LinkBandwidth", DataRateValue(DataRate(uint64_t(bps))),
                              "LinkDelay", TimeValue(Seconds(m_delay)));
      } else if (m_buckets > 0) {  // CoDel's drops off: targets of 100 s
        tch.AddChildQueueDisc(root, c, "ns3::FqCoDelQueueDisc", "MaxSize", StringValue(size),
                              "Flows", UintegerValue(m_buckets), "Target", StringValue("100s"),
                              "Interval", StringValue("1000s"));
      } else {
        tch.AddChildQueueDisc(root, c, "ns3::FifoQueueDisc", "MaxSize", StringValue(size));
      }
    }
    tch.AddPacketFilter(root, "ns3::CoflowbedDscpBandFilter");
    QueueDiscContainer qs = tch.Install(dev);
    if (m_buckets > 0 && !m_ecn)  // a child cannot read its device's MTU: one frame
      for (uint32_t b = 0; b < qs.Get(0)->GetNQueueDiscClasses(); ++b)
        DynamicCast<FqCoDelQueueDisc>(qs.Get(0)->GetQueueDiscClass(b)->GetQueueDisc())
            ->SetQuantum(m_mtu + 100);
    m_prios.push_back(qs.Get(0));
  }

  void Accepted(Ptr<Socket> s, const Address& from) {
    Address local;
    s->GetSockName(local);
    uint16_t port = InetSocketAddress::ConvertFrom(local).GetPort();
    uint32_t host = s->GetNode()->GetId();
    auto it = m_byPort.find(Key(HostIndex(host), port));
    if (it == m_byPort.end()) return;
    m_bySocket[PeekPointer(s)] = it->second;
    s->SetRecvCallback(MakeCallback(&Bed::Received, this));
  }

  uint32_t HostIndex(uint32_t nodeId) const {
    for (uint32_t h = 0; h < m_hosts.GetN(); ++h)
      if (m_hosts.Get(h)->GetId() == nodeId) return h;
    return 0xffffffff;
  }

  void Received(Ptr<Socket> s) {
    uint32_t i = m_bySocket[PeekPointer(s)];
    Flow& f = flows[i];
    Ptr<Packet> p;
    while ((p = s->Recv())) f.received += p->GetSize();
    if (f.firstRx < 0 && f.received > 0) f.firstRx = Simulator::Now().GetSeconds();
    if (f.finish < 0 && f.received >= f.bytes) {
      f.finish = Simulator::Now().GetSeconds();
      done.push_back(i);
      f.pace.Cancel();
      f.tx->Close();
      s->Close();
      f.listen->Close();
      Simulator::Stop();
    }
  }

  void Connected(Ptr<Socket> s) { Fill(m_bySocket[PeekPointer(s)]); }
  void Failed(Ptr<Socket> s) { NS_FATAL_ERROR("coflowbed: a flow's connection failed"); }
  void Space(Ptr<Socket> s, uint32_t) { Fill(m_bySocket[PeekPointer(s)]); }
  void Retransmitted(Ptr<const Packet> p, const TcpHeader&, const Address&, const Address&,
                     Ptr<const TcpSocketBase> s) {
    ++retransmits;
    auto it = m_bySocket.find(const_cast<Socket*>(static_cast<const Socket*>(PeekPointer(s))));
    if (it != m_bySocket.end()) flows[it->second].retransmitted += p->GetSize();
  }

  // Hand flow i's socket as many bytes as its buffer and its rate cap allow.
  void Fill(uint32_t i) {
    Flow& f = flows[i];
    if (f.finish >= 0 || f.tx->GetTxAvailable() == 0) return;
    uint64_t limit = f.bytes;
    if (f.rateBps > 0) {
      double now = Simulator::Now().GetSeconds();
      uint64_t allowed = f.paceBase + uint64_t(f.rateBps / 8 * (now - f.paceT0)) + 1500;
      limit = std::min(limit, allowed);
    }
    while (f.handed < limit) {
      uint32_t n = uint32_t(std::min<uint64_t>({limit - f.handed, f.tx->GetTxAvailable(), 65536}));
      if (n == 0) break;
      int sent = f.tx->Send(Create<Packet>(n));
      if (sent <= 0) break;
      f.handed += sent;
    }
    if (f.rateBps > 0 && f.handed < f.bytes && !f.pace.IsPending())
      f.pace = Simulator::Schedule(Seconds(1500 * 8 / f.rateBps), &Bed::Refill, this, i);
  }

  void Refill(uint32_t i) { Fill(i); }
};

// Register the filter's TypeId before any helper looks it up by name.
inline TypeId RegisterFilter() { return DscpBandFilter::GetTypeId(); }

}  // namespace coflowbed_packet
