-- Argo CD health check for qdmesh.io/RouterMesh (qdmesh operator).
-- Reads the kstatus-style conditions the operator writes: Stalled=True -> Degraded,
-- Reconciling=True or Ready=False -> Progressing, Ready=True -> Healthy; a status older than
-- the spec (observedGeneration < generation) is Progressing.
local hs = {}

local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function describe(c, fallback)
  if c.message ~= nil and c.message ~= "" then
    if c.reason ~= nil and c.reason ~= "" then
      return c.reason .. ": " .. c.message
    end
    return c.message
  end
  return c.reason or fallback
end

local function details()
  if obj.status.readyRouters ~= nil and obj.spec ~= nil and obj.spec.size ~= nil then
    return " (" .. obj.status.readyRouters .. "/" .. obj.spec.size .. " routers ready)"
  end
  return ""
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the qdmesh operator to report status"
  return hs
end

local generation = obj.metadata and obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and observed ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile generation " .. generation
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled, "Stalled") .. details()
  return hs
end

local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = describe(reconciling, "Reconciling") .. details()
  return hs
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready, "Ready") .. details()
  return hs
end
if ready ~= nil and ready.status == "False" then
  hs.status = "Progressing"
  hs.message = describe(ready, "Not ready") .. details()
  return hs
end

hs.status = "Progressing"
hs.message = "Waiting for the Ready condition"
return hs
