"""papermill on a machine without sockets: the notebook's cells run in this process, in
IPython's in-process kernel (``ipykernel.inprocess``), driven by papermill's own nbclient engine.

    python tools/runall/inprocess.py INPUT OUTPUT [papermill options]

The same command line as ``python -m papermill``. run_all.sh chooses it where a kernel cannot
start: no Internet socket can be opened, not even on the loopback (the lent TPU machine
refuses them with errno 97, and a Jupyter kernel needs them), or with ``--engine inprocess``.
What differs from a kernel of its own: the cells share this process (its environment, and
the working directory that ``--cwd`` sets); a cell cannot be interrupted, so papermill's
``--execution-timeout`` is not enforced (the command's own time limit is); a cell that kills
the process ends the run, which then publishes nothing, as for any failed notebook.
Run by the notebook environment's Python (papermill, ipykernel), not by run_all.py's.
"""

from __future__ import annotations

import os
import sys
from queue import Empty


def sockets_refused() -> str | None:
    """Why a Jupyter kernel cannot start here (no Internet socket on the loopback), or None.
    Standard library only: run_all.py asks before it starts papermill."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
    except OSError as err:
        return f"no Internet socket can be opened on the loopback ({err})"
    return None


def engine() -> type:
    """papermill's nbclient engine on an in-process kernel."""
    from ipykernel.inprocess.blocking import BlockingInProcessChannel, BlockingInProcessKernelClient
    from ipykernel.inprocess.manager import InProcessKernelManager
    from papermill.engines import NBClientEngine
    from traitlets import Type

    class IOPub(BlockingInProcessChannel):
        """The in-process kernel's stdout and stderr streams carry no parent header, and
        nbclient keeps only a cell's own messages: cells run one at a time, so the running
        cell wrote them."""

        def get_msg(self, block=True, timeout=None):
            msg = super().get_msg(block, timeout)
            running = getattr(self.client, "running", None)
            if not msg.get("parent_header") and running is not None:
                msg["parent_header"] = dict(running)
            return msg

    class Client(BlockingInProcessKernelClient):
        """nbclient's calls on the in-process channels."""

        iopub_channel_class = Type(IOPub)
        running: dict | None = None

        def wait_for_ready(self, timeout=None):
            """The kernel answers at once (ipykernel's own version prints each message)."""
            self.kernel_info()
            while self.shell_channel.get_msg(block=True, timeout=10)["msg_type"] != "kernel_info_reply":
                pass
            while True:
                try:
                    self.iopub_channel.get_msg(block=True, timeout=0.2)
                except Empty:
                    return

        def execute(self, *args, **kwargs):
            msg_id = super().execute(*args, **kwargs)
            self.running = {"msg_id": msg_id, "msg_type": "execute_request"}
            return msg_id

    class Manager(InProcessKernelManager):
        """nbclient's calls on the in-process kernel: start in ``cwd``, shut down."""

        def start_kernel(self, **kwargs):
            if kwargs.get("cwd"):
                os.chdir(kwargs["cwd"])
            return super().start_kernel()

        def client(self, **kwargs):
            kwargs.pop("kernel", None)
            return Client(parent=self, kernel=self.kernel, session=self.session, **kwargs)

        def shutdown_kernel(self, now=False, restart=False):
            return super().shutdown_kernel()

        def interrupt_kernel(self):
            raise RuntimeError("the in-process engine cannot interrupt a running cell")

    class InProcessEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            kwargs["kernel_manager_class"] = Manager
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    return InProcessEngine


def main(argv: list[str]) -> int:
    # Figures inline, as a kernel of its own sets it for its process.
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    os.environ["JAXPERF_INPROCESS"] = "1"  # jaxperf's progress bars: text lines, as under papermill
    from papermill.cli import papermill
    from papermill.engines import papermill_engines

    papermill_engines.register("inprocess", engine())
    try:
        papermill.main(args=[*argv, "--engine", "inprocess"], prog_name="papermill", standalone_mode=False)
    except SystemExit as err:
        return err.code if isinstance(err.code, int) else 1
    except Exception as err:  # a cell that raised (papermill's own CLI exits 1 too)
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
