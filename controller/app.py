"""The os-ken OpenFlow 1.3 application: glue between os-ken events, the OpenFlow
driver and the control plane, plus the control API server.

Runs on os-ken's *native* hub (threads; os-ken 4.x's default): the control plane waits
on ``threading.Event`` with timeouts, which an eventlet hub would not honour.  The
launcher enforces ``OSKEN_HUB_TYPE=native``.  OpenFlow events arrive on the app's event
thread and are never blocked on: installs and API requests run in threads of their own.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import (
    CONFIG_DISPATCHER,
    DEAD_DISPATCHER,
    HANDSHAKE_DISPATCHER,
    MAIN_DISPATCHER,
    set_ev_cls,
)
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_3

from controller.api_server import ApiServer
from controller.control_plane import ControlConfig, ControlPlane
from controller.southbound.openflow import OpenFlowDriver
from topo.plan import FabricPlan

log = logging.getLogger("controller.app")


@dataclass(frozen=True)
class AppSettings:
    """What the launcher passes to the app."""

    plan_path: Path
    api_socket: Path
    control: ControlConfig


def load_plan(path: Path) -> FabricPlan:
    """Read a FabricPlan JSON file; ValueError naming the file on bad content."""
    try:
        return FabricPlan.from_dict(json.loads(Path(path).read_text()))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a fabric plan: {e}") from None


def port_is_down(ofp, desc) -> bool:
    """A port (OFPPort) without carrier or administratively down."""
    return bool(desc.state & ofp.OFPPS_LINK_DOWN or desc.config & ofp.OFPPC_PORT_DOWN)


def port_downs(dp) -> dict[int, bool]:
    """{port: down} of the ports a datapath reported at its handshake (LOCAL left out)."""
    ofp = dp.ofproto
    return {
        no: port_is_down(ofp, desc)
        for no, desc in (getattr(dp, "ports", None) or {}).items()
        if no < ofp.OFPP_MAX
    }


class CoflowApp(app_manager.OSKenApp):
    """Installs routing and the coflow table; serves the control API."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, coflow_settings: AppSettings, **kwargs) -> None:
        """Build driver, control plane and API server (socket bound here)."""
        super().__init__(*args, **kwargs)
        if hub.HUB_TYPE != "native":
            raise RuntimeError("CoflowApp needs OSKEN_HUB_TYPE=native (threads)")
        self.plan = load_plan(coflow_settings.plan_path)
        self.driver = OpenFlowDriver(self.plan, on_removed=self._on_removed)
        self.plane = ControlPlane(self.plan, self.driver, coflow_settings.control, spawn=hub.spawn)
        self.api = ApiServer(coflow_settings.api_socket, self.plane.handle, spawn=hub.spawn)

    def _on_removed(self, switch: str, cookie: int, nbytes: int, packets: int) -> None:
        """Forward removal counters to the control plane."""
        self.plane.on_removed(switch, cookie, nbytes, packets)

    def start(self):
        """Start the event thread and the API accept loop."""
        thread = super().start()
        hub.spawn(self.api.serve_forever)
        log.info("control API listening on %s", self.api.path)
        return thread

    def close(self) -> None:
        """Remove the API socket."""
        self.api.close()

    @set_ev_cls(ofp_event.EventOFPStateChange, [MAIN_DISPATCHER, DEAD_DISPATCHER])
    def _state_change(self, ev) -> None:
        """Handshake done -> (re)install; connection lost -> not ready."""
        if ev.state == MAIN_DISPATCHER:
            name = self.driver.attach(ev.datapath)
            if name:
                self.plane.port_states(name, port_downs(ev.datapath))
                self.plane.switch_connected(name)
        elif ev.state == DEAD_DISPATCHER:
            name = self.driver.detach(ev.datapath)
            if name:
                self.plane.switch_disconnected(name)

    @set_ev_cls(
        [
            ofp_event.EventOFPBarrierReply,
            ofp_event.EventOFPFlowStatsReply,
            ofp_event.EventOFPPortStatsReply,
            ofp_event.EventOFPMeterStatsReply,
            ofp_event.EventOFPGroupDescStatsReply,
            ofp_event.EventOFPMeterConfigStatsReply,
        ],
        MAIN_DISPATCHER,
    )
    def _reply(self, ev) -> None:
        """Replies to requests some thread waits for."""
        self.driver.on_reply(ev.msg)

    @set_ev_cls(
        ofp_event.EventOFPErrorMsg, [HANDSHAKE_DISPATCHER, CONFIG_DISPATCHER, MAIN_DISPATCHER]
    )
    def _error(self, ev) -> None:
        """Errors are matched to the write or request that caused them."""
        self.driver.on_error(ev.msg)

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def _port_status(self, ev) -> None:
        """A port went down or up: the control plane reroutes around a dead link."""
        msg, t = ev.msg, time.monotonic()
        name = self.driver.name_of(msg.datapath)
        if name is not None:
            ofp = msg.datapath.ofproto
            down = msg.reason == ofp.OFPPR_DELETE or port_is_down(ofp, msg.desc)
            self.plane.port_status(name, msg.desc.port_no, down, t)

    @set_ev_cls(ofp_event.EventOFPFlowRemoved, MAIN_DISPATCHER)
    def _flow_removed(self, ev) -> None:
        """Counters of removed coflow rules."""
        self.driver.on_flow_removed(ev.msg)
