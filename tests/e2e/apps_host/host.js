// The host page of the MCP Apps test (tests/e2e/test_apps_host.py): the official host-side
// SDK (AppBridge of @modelcontextprotocol/ext-apps, pinned by .ci/run) renders a kb-mcp view
// in a sandboxed iframe, as Claude or VS Code do. Its MCP client is the test's (window.kbMcp,
// a Playwright binding to the SDK's Python client connected to a real `kb-mcp serve`), as a
// desktop host's client lives outside its renderer: the page never holds a token.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

async function forward(method, params) {
  return JSON.parse(await window.kbMcp(method, JSON.stringify(params)));
}

// Render `html` (a ui:// resource's text) and hand it the call it was opened with.
window.showView = async function showView(html, toolInput, toolResult) {
  // the tool result in hand (the view marks when it showed it: body[data-shown-at])
  document.body.dataset.resultAt = String(performance.timeOrigin + performance.now());
  const frame = document.createElement("iframe");
  frame.id = "view";
  frame.setAttribute("sandbox", "allow-scripts");  // an opaque origin: no access to the host
  frame.width = "1100";
  frame.height = "600";
  document.getElementById("stage").replaceChildren(frame);
  const bridge = new AppBridge(null, { name: "kb-mcp-test-host", version: "1.0.0" },
    { serverTools: {}, serverResources: {} });
  bridge.oncalltool = (params) => forward("tools/call", params);
  bridge.onreadresource = (params) => forward("resources/read", params);
  bridge.onsizechange = ({ height }) => { if (height) frame.height = String(height); };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
  await initialized;
  await bridge.sendToolInput({ arguments: toolInput });
  await bridge.sendToolResult(toolResult);
  document.body.dataset.shown = String(Number(document.body.dataset.shown || "0") + 1);
};
